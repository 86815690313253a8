ALTER TABLE "webhook_bodies" DROP CONSTRAINT "webhook_bodies_account_id_accounts_id_fk";
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_account_id_accounts_id_fk";
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_endpoint_id_webhook_endpoints_id_fk";
--> statement-breakpoint
DROP INDEX "webhook_deliveries_chain_idx";--> statement-breakpoint
DROP INDEX "webhook_deliveries_created_idx";--> statement-breakpoint
CREATE INDEX "webhook_deliveries_created_brin" ON "webhook_deliveries" USING brin ("created_at");