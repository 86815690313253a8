CREATE TABLE "mirror_deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"seq" bigserial NOT NULL,
	"account_id" text NOT NULL,
	"mirror_id" text NOT NULL,
	"kind" text NOT NULL,
	"chain_id" text NOT NULL,
	"attempt" integer NOT NULL,
	"status" text NOT NULL,
	"body" text NOT NULL,
	"line_count" integer NOT NULL,
	"next_retry_at" timestamp with time zone,
	"response_status" integer,
	"latency_ms" integer,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"attempted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "mirror_lines" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"mirror_id" text NOT NULL,
	"account_id" text NOT NULL,
	"event_id" text NOT NULL,
	"channel_name" text NOT NULL,
	"author_name" text NOT NULL,
	"text" text NOT NULL,
	"is_reply" boolean NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "mirrors" (
	"id" text PRIMARY KEY NOT NULL,
	"seq" bigserial NOT NULL,
	"account_id" text NOT NULL,
	"created_by_user_id" text NOT NULL,
	"url" text NOT NULL,
	"channel_ids" text[] NOT NULL,
	"format" text NOT NULL,
	"enabled" boolean NOT NULL,
	"disabled_reason" text,
	"enabled_at" timestamp with time zone,
	"disabled_at" timestamp with time zone,
	"failing_since" timestamp with time zone,
	"last_success_at" timestamp with time zone,
	"last_failure_at" timestamp with time zone,
	"next_send_at" timestamp with time zone,
	"claimed_until" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "mirrors" ADD CONSTRAINT "mirrors_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mirrors" ADD CONSTRAINT "mirrors_created_by_user_id_users_id_fk" FOREIGN KEY ("created_by_user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "mirror_deliveries_mirror_seq_idx" ON "mirror_deliveries" USING btree ("mirror_id","seq");--> statement-breakpoint
CREATE INDEX "mirror_deliveries_open_idx" ON "mirror_deliveries" USING btree ("mirror_id","next_retry_at") WHERE status IN ('pending', 'retrying');--> statement-breakpoint
CREATE INDEX "mirror_deliveries_created_brin" ON "mirror_deliveries" USING brin ("created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "mirror_lines_mirror_event_uq" ON "mirror_lines" USING btree ("mirror_id","event_id");--> statement-breakpoint
CREATE INDEX "mirrors_account_seq_idx" ON "mirrors" USING btree ("account_id","seq");--> statement-breakpoint
CREATE INDEX "mirrors_enabled_idx" ON "mirrors" USING btree ("account_id") WHERE enabled AND deleted_at IS NULL;