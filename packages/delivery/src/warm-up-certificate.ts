/**
 * The key and self-signed certificate of the worker's warm-up receiver (warm-up-attempts.ts), for
 * `warm-up.invalid` (a name that resolves nowhere: RFC 6761), valid until 2126. Public on purpose:
 * the warm-up's attempts trust this certificate for their own target only (a target with its own
 * CA gets transport pools of its own, never shared), that target is made in the warm-up's code
 * and dials its receiver on loopback, and both are closed before the worker is ready. No
 * endpoint can name it: an endpoint's URL is vetted by the guard, and its CA comes only from a
 * `webhooks:listen` allowance (never in production).
 */
export const WARM_UP_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgMvXjInsS0KPMZF+l
7A5fGxi2FFU6rgguyH/QkH5kAUChRANCAARYMv/tUT7z4S1eLImLzAwFR7S1wg03
bJPIsWmSxKpXB+058cDREyTHLSyY5+MqvMJl2ZZe6/FMY27mBbNa+iYu
-----END PRIVATE KEY-----
`;

export const WARM_UP_CERTIFICATE = `-----BEGIN CERTIFICATE-----
MIIBtjCCAV2gAwIBAgIUOsrhJ4OmrRU7hvjjr+F65x5utqowCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPd2FybS11cC5pbnZhbGlkMCAXDTI2MTEyNzA0MzE0OFoYDzIx
MjYxMTAzMDQzMTQ4WjAaMRgwFgYDVQQDDA93YXJtLXVwLmludmFsaWQwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAARYMv/tUT7z4S1eLImLzAwFR7S1wg03bJPIsWmS
xKpXB+058cDREyTHLSyY5+MqvMJl2ZZe6/FMY27mBbNa+iYuo38wfTAdBgNVHQ4E
FgQU85PoPxs4JHwVKRQQzI1BSBeAbn8wHwYDVR0jBBgwFoAU85PoPxs4JHwVKRQQ
zI1BSBeAbn8wGgYDVR0RBBMwEYIPd2FybS11cC5pbnZhbGlkMA8GA1UdEwEB/wQF
MAMBAf8wDgYDVR0PAQH/BAQDAgKEMAoGCCqGSM49BAMCA0cAMEQCIDxG3RZxX+JQ
sOxmCpkd9Djyq1n0nOTrfNnwjuTezBhmAiBvwutl5d/SXa4pPAQX3htsUnlYTG+6
S+zDNuMSkzdWCQ==
-----END CERTIFICATE-----
`;
