CREATE TABLE "notifications" (
	"id" text PRIMARY KEY NOT NULL,
	"seq" bigserial NOT NULL,
	"account_id" text NOT NULL,
	"user_id" text NOT NULL,
	"kind" text NOT NULL,
	"data" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"emailed_at" timestamp with time zone,
	"read_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_bodies" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"event_id" text NOT NULL,
	"event_type" text NOT NULL,
	"mode" text NOT NULL,
	"body" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"seq" bigserial NOT NULL,
	"account_id" text NOT NULL,
	"endpoint_id" text NOT NULL,
	"event_id" text NOT NULL,
	"event_type" text NOT NULL,
	"body_id" text NOT NULL,
	"kind" text NOT NULL,
	"chain_id" text NOT NULL,
	"attempt" integer NOT NULL,
	"status" text NOT NULL,
	"next_retry_at" timestamp with time zone,
	"claimed_until" timestamp with time zone,
	"response_status" integer,
	"latency_ms" integer,
	"error" text,
	"event_created_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"attempted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "webhook_endpoints" (
	"id" text PRIMARY KEY NOT NULL,
	"seq" bigserial NOT NULL,
	"account_id" text NOT NULL,
	"created_by_user_id" text NOT NULL,
	"created_via" text NOT NULL,
	"url" text NOT NULL,
	"events" text[] NOT NULL,
	"all_channels" boolean NOT NULL,
	"channel_ids" text[] DEFAULT '{}'::text[] NOT NULL,
	"payload" text DEFAULT 'pointers' NOT NULL,
	"enabled" boolean NOT NULL,
	"disabled_reason" text,
	"enabled_at" timestamp with time zone,
	"disabled_at" timestamp with time zone,
	"secret_enc" text NOT NULL,
	"secret_pending_reveal" boolean DEFAULT false NOT NULL,
	"previous_secret_enc" text,
	"previous_valid_until" timestamp with time zone,
	"authorization_enc" text,
	"failing_since" timestamp with time zone,
	"last_success_at" timestamp with time zone,
	"last_failure_at" timestamp with time zone,
	"version" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "notifications" ADD CONSTRAINT "notifications_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notifications" ADD CONSTRAINT "notifications_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_bodies" ADD CONSTRAINT "webhook_bodies_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_endpoint_id_webhook_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."webhook_endpoints"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_body_id_webhook_bodies_id_fk" FOREIGN KEY ("body_id") REFERENCES "public"."webhook_bodies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_created_by_user_id_users_id_fk" FOREIGN KEY ("created_by_user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "notifications_account_user_seq_idx" ON "notifications" USING btree ("account_id","user_id","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_bodies_event_mode_uq" ON "webhook_bodies" USING btree ("event_id","mode");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_seq_idx" ON "webhook_deliveries" USING btree ("endpoint_id","seq");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_open_idx" ON "webhook_deliveries" USING btree ("status","next_retry_at") WHERE status IN ('pending', 'retrying');--> statement-breakpoint
CREATE INDEX "webhook_deliveries_chain_idx" ON "webhook_deliveries" USING btree ("chain_id");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_created_idx" ON "webhook_deliveries" USING btree ("created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_deliveries_fanout_uq" ON "webhook_deliveries" USING btree ("endpoint_id","event_id") WHERE kind = 'event' AND attempt = 1;--> statement-breakpoint
CREATE INDEX "webhook_endpoints_account_seq_idx" ON "webhook_endpoints" USING btree ("account_id","seq");--> statement-breakpoint
CREATE INDEX "webhook_endpoints_enabled_idx" ON "webhook_endpoints" USING btree ("account_id") WHERE enabled AND deleted_at IS NULL;