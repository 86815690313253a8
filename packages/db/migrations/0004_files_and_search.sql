-- pg_trgm (trusted: the database owner may create it) provides gin_trgm_ops for messages_text_trgm_idx.
-- Nothing here rewrites or scans `messages` (drizzle's migrator runs this in one transaction): the
-- search column is plain (adding it is a catalog change) and kept by a trigger; older rows are
-- filled and the three messages indexes built CONCURRENTLY by the online steps that run after
-- drizzle's migrations (packages/db/src/online.ts; docs/operations.md "Migrations").
CREATE EXTENSION IF NOT EXISTS pg_trgm;--> statement-breakpoint
CREATE TABLE "files" (
	"id" text PRIMARY KEY NOT NULL,
	"seq" bigserial NOT NULL,
	"account_id" text NOT NULL,
	"uploaded_by_identity_id" text NOT NULL,
	"name" text NOT NULL,
	"size" bigint NOT NULL,
	"content_type" text NOT NULL,
	"state" text DEFAULT 'pending' NOT NULL,
	"storage_key" text NOT NULL,
	"sha256" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "message_files" (
	"channel_id" text NOT NULL,
	"ts_micros" bigint NOT NULL,
	"file_id" text NOT NULL,
	"account_id" text NOT NULL,
	CONSTRAINT "message_files_channel_id_ts_micros_file_id_pk" PRIMARY KEY("channel_id","ts_micros","file_id")
);
--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "search_vector" "tsvector";--> statement-breakpoint
CREATE FUNCTION "messages_search_vector"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.search_vector := to_tsvector('simple'::regconfig, NEW.text);
	RETURN NEW;
END
$$;--> statement-breakpoint
CREATE TRIGGER "messages_search_vector" BEFORE INSERT OR UPDATE OF "text" ON "messages" FOR EACH ROW EXECUTE FUNCTION "messages_search_vector"();--> statement-breakpoint
ALTER TABLE "files" ADD CONSTRAINT "files_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "files" ADD CONSTRAINT "files_uploaded_by_identity_id_identities_id_fk" FOREIGN KEY ("uploaded_by_identity_id") REFERENCES "public"."identities"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "message_files" ADD CONSTRAINT "message_files_file_id_files_id_fk" FOREIGN KEY ("file_id") REFERENCES "public"."files"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "message_files" ADD CONSTRAINT "message_files_channel_id_ts_micros_messages_channel_id_ts_micros_fk" FOREIGN KEY ("channel_id","ts_micros") REFERENCES "public"."messages"("channel_id","ts_micros") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "files_account_seq_idx" ON "files" USING btree ("account_id","seq");--> statement-breakpoint
CREATE INDEX "files_uploader_seq_idx" ON "files" USING btree ("uploaded_by_identity_id","seq");--> statement-breakpoint
CREATE INDEX "files_pending_created_idx" ON "files" USING btree ("created_at") WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX "message_files_file_idx" ON "message_files" USING btree ("file_id");
