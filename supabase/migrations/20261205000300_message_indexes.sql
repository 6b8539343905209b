-- Indexes that retention needs as histories grow (Supabase's Performance Advisor: unindexed foreign keys).
--
-- Deleting a finished chain deletes its messages, and each deleted message's replies are looked up
-- through agent_messages.reply_to_id (ON DELETE of the foreign key): without an index, one sequential
-- scan of agent_messages per deleted message, so a retention pass slowed with the size of the table.
-- The direct messages (task_id is null) past the cutoff were found by a full scan on every sweep too.

create index agent_messages_reply_to_idx on public.agent_messages (reply_to_id) where reply_to_id is not null;

create index agent_messages_direct_idx on public.agent_messages (created_at) where task_id is null;
