-- Enabling an endpoint holds its event deliveries until the enable's test event is recorded
-- (spec: Delivery behaviour 6; docs/webhooks.md "Enabling delivers a test event first").
-- A nullable column without a default: a change of the catalogue only, no table rewrite.
ALTER TABLE "webhook_endpoints" ADD COLUMN "enable_test_until" timestamp with time zone;
