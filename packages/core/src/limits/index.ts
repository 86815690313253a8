// Fair-use limits (per-seat rate limits, daily call units): filled by the limits issue.
export {};
