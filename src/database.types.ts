// Generated from the migrated schema by `npm run types` (supabase gen types --lang typescript); do not edit.

export type Json = string | number | boolean | null | { [key: string]: Json | undefined } | Json[]

export type Database = {
  
  "public": {
          Tables: {
            "agent_daily_spend": {
                  Row: {
                    "agent_id": string,"behalf_tokens": number,"behalf_usd": number,"day": string,"tokens": number,"usd": number
                  }
                  ComputedFields: never
                  Insert: {
                    "agent_id": string,"behalf_tokens"?: number,"behalf_usd"?: number,"day": string,"tokens"?: number,"usd"?: number
                  }
                  Update: {
                    "agent_id"?: string,"behalf_tokens"?: number,"behalf_usd"?: number,"day"?: string,"tokens"?: number,"usd"?: number
                  }
                  Relationships: [
                    {
      foreignKeyName: "agent_daily_spend_agent_id_fkey"
      columns: ["agent_id"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "agent_daily_spend_agent_id_fkey"
      columns: ["agent_id"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    }
                  ]
                },"agent_messages": {
                  Row: {
                    "body": NonNullable<Json>,"created_at": string,"from_agent": string,"id": string,"kind": Database["public"]['Enums']["message_kind"],"read_at": string | null,"reply_to_id": string | null,"task_id": string | null,"to_agent": string | null
                  }
                  ComputedFields: never
                  Insert: {
                    "body": NonNullable<Json>,"created_at"?: string,"from_agent"?: string,"id"?: string,"kind"?: Database["public"]['Enums']["message_kind"],"read_at"?: string | null,"reply_to_id"?: string | null,"task_id"?: string | null,"to_agent"?: string | null
                  }
                  Update: {
                    "body"?: NonNullable<Json>,"created_at"?: string,"from_agent"?: string,"id"?: string,"kind"?: Database["public"]['Enums']["message_kind"],"read_at"?: string | null,"reply_to_id"?: string | null,"task_id"?: string | null,"to_agent"?: string | null
                  }
                  Relationships: [
                    {
      foreignKeyName: "agent_messages_from_agent_fkey"
      columns: ["from_agent"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "agent_messages_from_agent_fkey"
      columns: ["from_agent"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "agent_messages_reply_to_id_fkey"
      columns: ["reply_to_id"]
isOneToOne: false
      referencedRelation: "agent_messages"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "agent_messages_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "dead_letters"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "agent_messages_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "stuck_claims"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "agent_messages_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "task_handoffs"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "agent_messages_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "task_lineage"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "agent_messages_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "waiting_tasks"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "agent_messages_to_agent_fkey"
      columns: ["to_agent"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "agent_messages_to_agent_fkey"
      columns: ["to_agent"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    }
                  ]
                },"agent_tokens": {
                  Row: {
                    "agent_id": string,"created_at": string,"expires_at": string | null,"id": string,"revoked_at": string | null
                  }
                  ComputedFields: never
                  Insert: {
                    "agent_id": string,"created_at"?: string,"expires_at"?: string | null,"id"?: string,"revoked_at"?: string | null
                  }
                  Update: {
                    "agent_id"?: string,"created_at"?: string,"expires_at"?: string | null,"id"?: string,"revoked_at"?: string | null
                  }
                  Relationships: [
                    {
      foreignKeyName: "agent_tokens_agent_id_fkey"
      columns: ["agent_id"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "agent_tokens_agent_id_fkey"
      columns: ["agent_id"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    }
                  ]
                },"agent_usage": {
                  Row: {
                    "agent_id": string,"artifacts": number,"handoffs": number,"messages": number,"minute": string,"open_tasks": number,"slot": number
                  }
                  ComputedFields: never
                  Insert: {
                    "agent_id": string,"artifacts"?: number,"handoffs"?: number,"messages"?: number,"minute"?: string,"open_tasks"?: number,"slot"?: number
                  }
                  Update: {
                    "agent_id"?: string,"artifacts"?: number,"handoffs"?: number,"messages"?: number,"minute"?: string,"open_tasks"?: number,"slot"?: number
                  }
                  Relationships: [
                    {
      foreignKeyName: "agent_usage_agent_id_fkey"
      columns: ["agent_id"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "agent_usage_agent_id_fkey"
      columns: ["agent_id"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    }
                  ]
                },"agents": {
                  Row: {
                    "capabilities": (string)[],"comms_endpoint": string | null,"created_at": string,"daily_token_cap": number | null,"daily_usd_cap": number | null,"display_name": string | null,"id": string,"incarnation": string | null,"incarnation_heard_at": string | null,"incarnation_started_at": string | null,"is_active": boolean,"last_heartbeat": string | null,"max_concurrent": number,"poll_interval": string | null,"skills_offered": NonNullable<Json>,"spend_capped_until": string | null,"status_message": string | null,"updated_at": string
                  }
                  ComputedFields: never
                  Insert: {
                    "capabilities"?: (string)[],"comms_endpoint"?: string | null,"created_at"?: string,"daily_token_cap"?: number | null,"daily_usd_cap"?: number | null,"display_name"?: string | null,"id": string,"incarnation"?: string | null,"incarnation_heard_at"?: string | null,"incarnation_started_at"?: string | null,"is_active"?: boolean,"last_heartbeat"?: string | null,"max_concurrent"?: number,"poll_interval"?: string | null,"skills_offered"?: NonNullable<Json>,"spend_capped_until"?: string | null,"status_message"?: string | null,"updated_at"?: string
                  }
                  Update: {
                    "capabilities"?: (string)[],"comms_endpoint"?: string | null,"created_at"?: string,"daily_token_cap"?: number | null,"daily_usd_cap"?: number | null,"display_name"?: string | null,"id"?: string,"incarnation"?: string | null,"incarnation_heard_at"?: string | null,"incarnation_started_at"?: string | null,"is_active"?: boolean,"last_heartbeat"?: string | null,"max_concurrent"?: number,"poll_interval"?: string | null,"skills_offered"?: NonNullable<Json>,"spend_capped_until"?: string | null,"status_message"?: string | null,"updated_at"?: string
                  }
                  Relationships: [
                    
                  ]
                },"baton_settings": {
                  Row: {
                    "artifacts_per_minute": number,"default_lease": string,"handoffs_per_minute": number,"id": boolean,"keep_finished": string | null,"max_chain_depth": number,"max_json_depth": number,"max_json_keys": number,"messages_per_minute": number,"offline_after": string,"open_tasks_per_sender": number,"retention_batch": number,"retry_base_delay": string,"retry_max_delay": string
                  }
                  ComputedFields: never
                  Insert: {
                    "artifacts_per_minute"?: number,"default_lease"?: string,"handoffs_per_minute"?: number,"id"?: boolean,"keep_finished"?: string | null,"max_chain_depth"?: number,"max_json_depth"?: number,"max_json_keys"?: number,"messages_per_minute"?: number,"offline_after"?: string,"open_tasks_per_sender"?: number,"retention_batch"?: number,"retry_base_delay"?: string,"retry_max_delay"?: string
                  }
                  Update: {
                    "artifacts_per_minute"?: number,"default_lease"?: string,"handoffs_per_minute"?: number,"id"?: boolean,"keep_finished"?: string | null,"max_chain_depth"?: number,"max_json_depth"?: number,"max_json_keys"?: number,"messages_per_minute"?: number,"offline_after"?: string,"open_tasks_per_sender"?: number,"retention_batch"?: number,"retry_base_delay"?: string,"retry_max_delay"?: string
                  }
                  Relationships: [
                    
                  ]
                },"recurring_handoffs": {
                  Row: {
                    "created_at": string,"enabled": boolean,"from_agent": string,"id": string,"last_error": string | null,"last_run_at": string | null,"last_task_id": string | null,"name": string,"next_run_at": string,"required_capabilities": (string)[],"schedule": string,"template": NonNullable<Json>,"to_agent": string | null
                  }
                  ComputedFields: never
                  Insert: {
                    "created_at"?: string,"enabled"?: boolean,"from_agent": string,"id"?: string,"last_error"?: string | null,"last_run_at"?: string | null,"last_task_id"?: string | null,"name": string,"next_run_at": string,"required_capabilities"?: (string)[],"schedule": string,"template": NonNullable<Json>,"to_agent"?: string | null
                  }
                  Update: {
                    "created_at"?: string,"enabled"?: boolean,"from_agent"?: string,"id"?: string,"last_error"?: string | null,"last_run_at"?: string | null,"last_task_id"?: string | null,"name"?: string,"next_run_at"?: string,"required_capabilities"?: (string)[],"schedule"?: string,"template"?: NonNullable<Json>,"to_agent"?: string | null
                  }
                  Relationships: [
                    {
      foreignKeyName: "recurring_handoffs_from_agent_fkey"
      columns: ["from_agent"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "recurring_handoffs_from_agent_fkey"
      columns: ["from_agent"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "recurring_handoffs_last_task_id_fkey"
      columns: ["last_task_id"]
isOneToOne: false
      referencedRelation: "dead_letters"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "recurring_handoffs_last_task_id_fkey"
      columns: ["last_task_id"]
isOneToOne: false
      referencedRelation: "stuck_claims"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "recurring_handoffs_last_task_id_fkey"
      columns: ["last_task_id"]
isOneToOne: false
      referencedRelation: "task_handoffs"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "recurring_handoffs_last_task_id_fkey"
      columns: ["last_task_id"]
isOneToOne: false
      referencedRelation: "task_lineage"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "recurring_handoffs_last_task_id_fkey"
      columns: ["last_task_id"]
isOneToOne: false
      referencedRelation: "waiting_tasks"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "recurring_handoffs_to_agent_fkey"
      columns: ["to_agent"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "recurring_handoffs_to_agent_fkey"
      columns: ["to_agent"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    }
                  ]
                },"task_artifacts": {
                  Row: {
                    "content": string | null,"created_at": string,"id": string,"media_type": string,"name": string,"producer": string,"sha256": string | null,"size_bytes": number | null,"task_id": string,"uri": string | null
                  }
                  ComputedFields: never
                  Insert: {
                    "content"?: string | null,"created_at"?: string,"id"?: string,"media_type"?: string,"name": string,"producer": string,"sha256"?: string | null,"size_bytes"?: number | null,"task_id": string,"uri"?: string | null
                  }
                  Update: {
                    "content"?: string | null,"created_at"?: string,"id"?: string,"media_type"?: string,"name"?: string,"producer"?: string,"sha256"?: string | null,"size_bytes"?: number | null,"task_id"?: string,"uri"?: string | null
                  }
                  Relationships: [
                    {
      foreignKeyName: "task_artifacts_producer_fkey"
      columns: ["producer"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_artifacts_producer_fkey"
      columns: ["producer"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_artifacts_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "dead_letters"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_artifacts_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "stuck_claims"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_artifacts_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "task_handoffs"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_artifacts_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "task_lineage"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_artifacts_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "waiting_tasks"
      referencedColumns: ["id"]
    }
                  ]
                },"task_budgets": {
                  Row: {
                    "created_at": string,"on_spent": string,"parent_budget": string | null,"set_by": string,"spent_at": string | null,"task_id": string,"tokens_limit": number | null,"tokens_spent": number,"updated_at": string,"usd_limit": number | null,"usd_spent": number
                  }
                  ComputedFields: never
                  Insert: {
                    "created_at"?: string,"on_spent"?: string,"parent_budget"?: string | null,"set_by": string,"spent_at"?: string | null,"task_id": string,"tokens_limit"?: number | null,"tokens_spent"?: number,"updated_at"?: string,"usd_limit"?: number | null,"usd_spent"?: number
                  }
                  Update: {
                    "created_at"?: string,"on_spent"?: string,"parent_budget"?: string | null,"set_by"?: string,"spent_at"?: string | null,"task_id"?: string,"tokens_limit"?: number | null,"tokens_spent"?: number,"updated_at"?: string,"usd_limit"?: number | null,"usd_spent"?: number
                  }
                  Relationships: [
                    {
      foreignKeyName: "task_budgets_parent_budget_fkey"
      columns: ["parent_budget"]
isOneToOne: false
      referencedRelation: "task_budgets"
      referencedColumns: ["task_id"]
    },{
      foreignKeyName: "task_budgets_task_id_fkey"
      columns: ["task_id"]
isOneToOne: true
      referencedRelation: "dead_letters"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_budgets_task_id_fkey"
      columns: ["task_id"]
isOneToOne: true
      referencedRelation: "stuck_claims"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_budgets_task_id_fkey"
      columns: ["task_id"]
isOneToOne: true
      referencedRelation: "task_handoffs"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_budgets_task_id_fkey"
      columns: ["task_id"]
isOneToOne: true
      referencedRelation: "task_lineage"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_budgets_task_id_fkey"
      columns: ["task_id"]
isOneToOne: true
      referencedRelation: "waiting_tasks"
      referencedColumns: ["id"]
    }
                  ]
                },"task_declines": {
                  Row: {
                    "agent_id": string,"declined_at": string,"reason": string,"task_id": string
                  }
                  ComputedFields: never
                  Insert: {
                    "agent_id": string,"declined_at"?: string,"reason": string,"task_id": string
                  }
                  Update: {
                    "agent_id"?: string,"declined_at"?: string,"reason"?: string,"task_id"?: string
                  }
                  Relationships: [
                    {
      foreignKeyName: "task_declines_agent_id_fkey"
      columns: ["agent_id"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_declines_agent_id_fkey"
      columns: ["agent_id"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_declines_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "dead_letters"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_declines_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "stuck_claims"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_declines_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "task_handoffs"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_declines_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "task_lineage"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_declines_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "waiting_tasks"
      referencedColumns: ["id"]
    }
                  ]
                },"task_events": {
                  Row: {
                    "actor": string,"at": string,"from_status": Database["public"]['Enums']["task_status"] | null,"id": number,"note": string | null,"task_id": string,"to_status": Database["public"]['Enums']["task_status"]
                  }
                  ComputedFields: never
                  Insert: {
                    "actor": string,"at"?: string,"from_status"?: Database["public"]['Enums']["task_status"] | null,"id"?: never,"note"?: string | null,"task_id": string,"to_status": Database["public"]['Enums']["task_status"]
                  }
                  Update: {
                    "actor"?: string,"at"?: string,"from_status"?: Database["public"]['Enums']["task_status"] | null,"id"?: never,"note"?: string | null,"task_id"?: string,"to_status"?: Database["public"]['Enums']["task_status"]
                  }
                  Relationships: [
                    {
      foreignKeyName: "task_events_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "dead_letters"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_events_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "stuck_claims"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_events_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "task_handoffs"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_events_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "task_lineage"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_events_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "waiting_tasks"
      referencedColumns: ["id"]
    }
                  ]
                },"task_handoffs": {
                  Row: {
                    "attempts": number,"budget_id": string | null,"claim_incarnation": string | null,"claim_lease": string | null,"claim_token": string | null,"claimed_at": string | null,"claimed_by": string | null,"completed_at": string | null,"created_at": string,"deadline": string | null,"dependency_mode": string,"depends_on": (string)[],"depth": number,"description": string | null,"expected_outputs": NonNullable<Json>,"from_agent": string,"id": string,"idempotency_key": string | null,"input_artifacts": NonNullable<Json>,"lease_expires_at": string | null,"lease_seconds": number | null,"max_attempts": number,"not_before": string | null,"on_dependency_failure": string,"parent_task_id": string | null,"payload": NonNullable<Json>,"priority": Database["public"]['Enums']["task_priority"],"problems": Json | null,"progress_at": string | null,"progress_message": string | null,"progress_percent": number | null,"recurrence_slot": string | null,"recurring_id": string | null,"required_capabilities": (string)[],"result": Json | null,"retry_of": string | null,"root_task_id": string | null,"run_at": string | null,"started_at": string | null,"status": Database["public"]['Enums']["task_status"],"status_reason": string | null,"title": string,"to_agent": string | null,"traceparent": string | null,"tracestate": string | null,"updated_at": string,"waiting_on": number
                  }
                  ComputedFields: never
                  Insert: {
                    "attempts"?: number,"budget_id"?: string | null,"claim_incarnation"?: string | null,"claim_lease"?: string | null,"claim_token"?: string | null,"claimed_at"?: string | null,"claimed_by"?: string | null,"completed_at"?: string | null,"created_at"?: string,"deadline"?: string | null,"dependency_mode"?: string,"depends_on"?: (string)[],"depth"?: number,"description"?: string | null,"expected_outputs"?: NonNullable<Json>,"from_agent": string,"id"?: string,"idempotency_key"?: string | null,"input_artifacts"?: NonNullable<Json>,"lease_expires_at"?: string | null,"lease_seconds"?: number | null,"max_attempts"?: number,"not_before"?: string | null,"on_dependency_failure"?: string,"parent_task_id"?: string | null,"payload"?: NonNullable<Json>,"priority"?: Database["public"]['Enums']["task_priority"],"problems"?: Json | null,"progress_at"?: string | null,"progress_message"?: string | null,"progress_percent"?: number | null,"recurrence_slot"?: string | null,"recurring_id"?: string | null,"required_capabilities"?: (string)[],"result"?: Json | null,"retry_of"?: string | null,"root_task_id"?: string | null,"run_at"?: string | null,"started_at"?: string | null,"status"?: Database["public"]['Enums']["task_status"],"status_reason"?: string | null,"title": string,"to_agent"?: string | null,"traceparent"?: string | null,"tracestate"?: string | null,"updated_at"?: string,"waiting_on"?: number
                  }
                  Update: {
                    "attempts"?: number,"budget_id"?: string | null,"claim_incarnation"?: string | null,"claim_lease"?: string | null,"claim_token"?: string | null,"claimed_at"?: string | null,"claimed_by"?: string | null,"completed_at"?: string | null,"created_at"?: string,"deadline"?: string | null,"dependency_mode"?: string,"depends_on"?: (string)[],"depth"?: number,"description"?: string | null,"expected_outputs"?: NonNullable<Json>,"from_agent"?: string,"id"?: string,"idempotency_key"?: string | null,"input_artifacts"?: NonNullable<Json>,"lease_expires_at"?: string | null,"lease_seconds"?: number | null,"max_attempts"?: number,"not_before"?: string | null,"on_dependency_failure"?: string,"parent_task_id"?: string | null,"payload"?: NonNullable<Json>,"priority"?: Database["public"]['Enums']["task_priority"],"problems"?: Json | null,"progress_at"?: string | null,"progress_message"?: string | null,"progress_percent"?: number | null,"recurrence_slot"?: string | null,"recurring_id"?: string | null,"required_capabilities"?: (string)[],"result"?: Json | null,"retry_of"?: string | null,"root_task_id"?: string | null,"run_at"?: string | null,"started_at"?: string | null,"status"?: Database["public"]['Enums']["task_status"],"status_reason"?: string | null,"title"?: string,"to_agent"?: string | null,"traceparent"?: string | null,"tracestate"?: string | null,"updated_at"?: string,"waiting_on"?: number
                  }
                  Relationships: [
                    {
      foreignKeyName: "task_handoffs_claimed_by_fkey"
      columns: ["claimed_by"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_claimed_by_fkey"
      columns: ["claimed_by"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_from_agent_fkey"
      columns: ["from_agent"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_from_agent_fkey"
      columns: ["from_agent"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_parent_task_id_fkey"
      columns: ["parent_task_id"]
isOneToOne: false
      referencedRelation: "dead_letters"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_parent_task_id_fkey"
      columns: ["parent_task_id"]
isOneToOne: false
      referencedRelation: "stuck_claims"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_parent_task_id_fkey"
      columns: ["parent_task_id"]
isOneToOne: false
      referencedRelation: "task_handoffs"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_parent_task_id_fkey"
      columns: ["parent_task_id"]
isOneToOne: false
      referencedRelation: "task_lineage"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_parent_task_id_fkey"
      columns: ["parent_task_id"]
isOneToOne: false
      referencedRelation: "waiting_tasks"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_recurring_id_fkey"
      columns: ["recurring_id"]
isOneToOne: false
      referencedRelation: "recurring_handoffs"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_retry_of_fkey"
      columns: ["retry_of"]
isOneToOne: false
      referencedRelation: "dead_letters"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_retry_of_fkey"
      columns: ["retry_of"]
isOneToOne: false
      referencedRelation: "stuck_claims"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_retry_of_fkey"
      columns: ["retry_of"]
isOneToOne: false
      referencedRelation: "task_handoffs"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_retry_of_fkey"
      columns: ["retry_of"]
isOneToOne: false
      referencedRelation: "task_lineage"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_retry_of_fkey"
      columns: ["retry_of"]
isOneToOne: false
      referencedRelation: "waiting_tasks"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_root_task_id_fkey"
      columns: ["root_task_id"]
isOneToOne: false
      referencedRelation: "dead_letters"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_root_task_id_fkey"
      columns: ["root_task_id"]
isOneToOne: false
      referencedRelation: "stuck_claims"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_root_task_id_fkey"
      columns: ["root_task_id"]
isOneToOne: false
      referencedRelation: "task_handoffs"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_root_task_id_fkey"
      columns: ["root_task_id"]
isOneToOne: false
      referencedRelation: "task_lineage"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_root_task_id_fkey"
      columns: ["root_task_id"]
isOneToOne: false
      referencedRelation: "waiting_tasks"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_to_agent_fkey"
      columns: ["to_agent"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_to_agent_fkey"
      columns: ["to_agent"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    }
                  ]
                },"task_runs": {
                  Row: {
                    "agent_id": string,"attempt": number,"cached_tokens": number,"cost_usd": number | null,"input_tokens": number,"model": string,"output_tokens": number,"reports": number,"root_task_id": string,"runtime": string,"session_id": string | null,"started_at": string,"task_id": string,"turns": number,"updated_at": string
                  }
                  ComputedFields: never
                  Insert: {
                    "agent_id": string,"attempt": number,"cached_tokens"?: number,"cost_usd"?: number | null,"input_tokens"?: number,"model": string,"output_tokens"?: number,"reports"?: number,"root_task_id": string,"runtime": string,"session_id"?: string | null,"started_at"?: string,"task_id": string,"turns"?: number,"updated_at"?: string
                  }
                  Update: {
                    "agent_id"?: string,"attempt"?: number,"cached_tokens"?: number,"cost_usd"?: number | null,"input_tokens"?: number,"model"?: string,"output_tokens"?: number,"reports"?: number,"root_task_id"?: string,"runtime"?: string,"session_id"?: string | null,"started_at"?: string,"task_id"?: string,"turns"?: number,"updated_at"?: string
                  }
                  Relationships: [
                    {
      foreignKeyName: "task_runs_agent_id_fkey"
      columns: ["agent_id"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_runs_agent_id_fkey"
      columns: ["agent_id"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_runs_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "dead_letters"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_runs_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "stuck_claims"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_runs_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "task_handoffs"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_runs_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "task_lineage"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_runs_task_id_fkey"
      columns: ["task_id"]
isOneToOne: false
      referencedRelation: "waiting_tasks"
      referencedColumns: ["id"]
    }
                  ]
                },"task_status_transitions": {
                  Row: {
                    "from_status": Database["public"]['Enums']["task_status"],"meaning": string,"to_status": Database["public"]['Enums']["task_status"]
                  }
                  ComputedFields: never
                  Insert: {
                    "from_status": Database["public"]['Enums']["task_status"],"meaning": string,"to_status": Database["public"]['Enums']["task_status"]
                  }
                  Update: {
                    "from_status"?: Database["public"]['Enums']["task_status"],"meaning"?: string,"to_status"?: Database["public"]['Enums']["task_status"]
                  }
                  Relationships: [
                    
                  ]
                }
          }
          Views: {
            "agent_presence": {
                  Row: {
                    "capabilities": (string)[],"comms_endpoint": string | null,"created_at": string,"display_name": string | null,"id": string,"incarnation": string | null,"incarnation_started_at": string | null,"is_active": boolean,"is_online": boolean | null,"last_heartbeat": string | null,"max_concurrent": number,"poll_interval": string | null,"skills_offered": NonNullable<Json>,"status_message": string | null,"updated_at": string
                  }
                  ComputedFields: never
                  Insert: {
                           "capabilities"?: (string)[] | null,"comms_endpoint"?: string | null,"created_at"?: string | null,"display_name"?: string | null,"id"?: string | null,"incarnation"?: string | null,"incarnation_started_at"?: string | null,"is_active"?: boolean | null,"is_online"?: never,"last_heartbeat"?: string | null,"max_concurrent"?: number | null,"poll_interval"?: string | null,"skills_offered"?: Json | null,"status_message"?: string | null,"updated_at"?: string | null
                         }
                        Update: {
                           "capabilities"?: (string)[] | null,"comms_endpoint"?: string | null,"created_at"?: string | null,"display_name"?: string | null,"id"?: string | null,"incarnation"?: string | null,"incarnation_started_at"?: string | null,"is_active"?: boolean | null,"is_online"?: never,"last_heartbeat"?: string | null,"max_concurrent"?: number | null,"poll_interval"?: string | null,"skills_offered"?: Json | null,"status_message"?: string | null,"updated_at"?: string | null
                         }
                        Relationships: [
                    
                  ]
                },"dead_letters": {
                  Row: {
                    "age": string | null,"attempts": number,"failed_at": string | null,"from_agent": string,"id": string,"last_holder": string | null,"reason": string | null,"required_capabilities": (string)[],"retried_as": string | null,"title": string,"to_agent": string | null
                  }
                  ComputedFields: never
                  Insert: {
                           "age"?: never,"attempts"?: number | null,"failed_at"?: string | null,"from_agent"?: string | null,"id"?: string | null,"last_holder"?: string | null,"reason"?: string | null,"required_capabilities"?: (string)[] | null,"retried_as"?: never,"title"?: string | null,"to_agent"?: string | null
                         }
                        Update: {
                           "age"?: never,"attempts"?: number | null,"failed_at"?: string | null,"from_agent"?: string | null,"id"?: string | null,"last_holder"?: string | null,"reason"?: string | null,"required_capabilities"?: (string)[] | null,"retried_as"?: never,"title"?: string | null,"to_agent"?: string | null
                         }
                        Relationships: [
                    {
      foreignKeyName: "task_handoffs_claimed_by_fkey"
      columns: ["last_holder"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_claimed_by_fkey"
      columns: ["last_holder"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_from_agent_fkey"
      columns: ["from_agent"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_from_agent_fkey"
      columns: ["from_agent"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_to_agent_fkey"
      columns: ["to_agent"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_to_agent_fkey"
      columns: ["to_agent"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    }
                  ]
                },"stuck_claims": {
                  Row: {
                    "attempts": number,"claimed_by": string | null,"from_agent": string,"holder_last_heartbeat": string | null,"id": string,"lease_expires_at": string | null,"max_attempts": number,"overdue_by": string | null,"status": Database["public"]['Enums']["task_status"],"title": string
                  }
                  ComputedFields: never
                  Relationships: [
                    {
      foreignKeyName: "task_handoffs_claimed_by_fkey"
      columns: ["claimed_by"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_claimed_by_fkey"
      columns: ["claimed_by"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_from_agent_fkey"
      columns: ["from_agent"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_from_agent_fkey"
      columns: ["from_agent"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    }
                  ]
                },"task_counts": {
                  Row: {
                    "since": string | null,"status": Database["public"]['Enums']["task_status"] | null,"tasks": number | null
                  }
                  ComputedFields: never
                  Relationships: [
                    
                  ]
                },"task_lineage": {
                  Row: {
                    "attempts": number,"completed_at": string | null,"created_at": string,"dependency_mode": string,"depends_on": (string)[],"depth": number,"from_agent": string,"id": string,"inputs": NonNullable<Json>,"outputs": Json | null,"parent_task_id": string | null,"producer": string | null,"progress_message": string | null,"progress_percent": number | null,"required_capabilities": (string)[],"result_status": Json | null,"root_task_id": string | null,"started_at": string | null,"status": Database["public"]['Enums']["task_status"],"status_reason": string | null,"summary": string | null,"title": string,"to_agent": string | null
                  }
                  ComputedFields: never
                  Insert: {
                           "attempts"?: number | null,"completed_at"?: string | null,"created_at"?: string | null,"dependency_mode"?: string | null,"depends_on"?: (string)[] | null,"depth"?: number | null,"from_agent"?: string | null,"id"?: string | null,"inputs"?: Json | null,"outputs"?: never,"parent_task_id"?: string | null,"producer"?: string | null,"progress_message"?: string | null,"progress_percent"?: number | null,"required_capabilities"?: (string)[] | null,"result_status"?: never,"root_task_id"?: string | null,"started_at"?: string | null,"status"?: Database["public"]['Enums']["task_status"] | null,"status_reason"?: string | null,"summary"?: never,"title"?: string | null,"to_agent"?: string | null
                         }
                        Update: {
                           "attempts"?: number | null,"completed_at"?: string | null,"created_at"?: string | null,"dependency_mode"?: string | null,"depends_on"?: (string)[] | null,"depth"?: number | null,"from_agent"?: string | null,"id"?: string | null,"inputs"?: Json | null,"outputs"?: never,"parent_task_id"?: string | null,"producer"?: string | null,"progress_message"?: string | null,"progress_percent"?: number | null,"required_capabilities"?: (string)[] | null,"result_status"?: never,"root_task_id"?: string | null,"started_at"?: string | null,"status"?: Database["public"]['Enums']["task_status"] | null,"status_reason"?: string | null,"summary"?: never,"title"?: string | null,"to_agent"?: string | null
                         }
                        Relationships: [
                    {
      foreignKeyName: "task_handoffs_claimed_by_fkey"
      columns: ["producer"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_claimed_by_fkey"
      columns: ["producer"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_from_agent_fkey"
      columns: ["from_agent"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_from_agent_fkey"
      columns: ["from_agent"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_parent_task_id_fkey"
      columns: ["parent_task_id"]
isOneToOne: false
      referencedRelation: "dead_letters"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_parent_task_id_fkey"
      columns: ["parent_task_id"]
isOneToOne: false
      referencedRelation: "stuck_claims"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_parent_task_id_fkey"
      columns: ["parent_task_id"]
isOneToOne: false
      referencedRelation: "task_handoffs"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_parent_task_id_fkey"
      columns: ["parent_task_id"]
isOneToOne: false
      referencedRelation: "task_lineage"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_parent_task_id_fkey"
      columns: ["parent_task_id"]
isOneToOne: false
      referencedRelation: "waiting_tasks"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_root_task_id_fkey"
      columns: ["root_task_id"]
isOneToOne: false
      referencedRelation: "dead_letters"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_root_task_id_fkey"
      columns: ["root_task_id"]
isOneToOne: false
      referencedRelation: "stuck_claims"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_root_task_id_fkey"
      columns: ["root_task_id"]
isOneToOne: false
      referencedRelation: "task_handoffs"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_root_task_id_fkey"
      columns: ["root_task_id"]
isOneToOne: false
      referencedRelation: "task_lineage"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_root_task_id_fkey"
      columns: ["root_task_id"]
isOneToOne: false
      referencedRelation: "waiting_tasks"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_to_agent_fkey"
      columns: ["to_agent"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_to_agent_fkey"
      columns: ["to_agent"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    }
                  ]
                },"task_queue": {
                  Row: {
                    "capability": string | null,"oldest_age": string | null,"oldest_created_at": string | null,"scheduled": number | null,"status": Database["public"]['Enums']["task_status"],"tasks": number | null,"waiting": number | null
                  }
                  ComputedFields: never
                  Relationships: [
                    
                  ]
                },"task_throughput": {
                  Row: {
                    "completed": number | null,"failed": number | null,"minute": string | null,"withdrawn": number | null
                  }
                  ComputedFields: never
                  Relationships: [
                    
                  ]
                },"waiting_tasks": {
                  Row: {
                    "created_at": string,"dependency_mode": string,"depends_on": (string)[],"from_agent": string,"id": string,"on_dependency_failure": string,"open_dependencies": (string)[] | null,"run_at": string | null,"title": string,"to_agent": string | null,"waiting_on": number
                  }
                  ComputedFields: never
                  Insert: {
                           "created_at"?: string | null,"dependency_mode"?: string | null,"depends_on"?: (string)[] | null,"from_agent"?: string | null,"id"?: string | null,"on_dependency_failure"?: string | null,"open_dependencies"?: never,"run_at"?: string | null,"title"?: string | null,"to_agent"?: string | null,"waiting_on"?: number | null
                         }
                        Update: {
                           "created_at"?: string | null,"dependency_mode"?: string | null,"depends_on"?: (string)[] | null,"from_agent"?: string | null,"id"?: string | null,"on_dependency_failure"?: string | null,"open_dependencies"?: never,"run_at"?: string | null,"title"?: string | null,"to_agent"?: string | null,"waiting_on"?: number | null
                         }
                        Relationships: [
                    {
      foreignKeyName: "task_handoffs_from_agent_fkey"
      columns: ["from_agent"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_from_agent_fkey"
      columns: ["from_agent"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_to_agent_fkey"
      columns: ["to_agent"]
isOneToOne: false
      referencedRelation: "agent_presence"
      referencedColumns: ["id"]
    },{
      foreignKeyName: "task_handoffs_to_agent_fkey"
      columns: ["to_agent"]
isOneToOne: false
      referencedRelation: "agents"
      referencedColumns: ["id"]
    }
                  ]
                }
          }
          Functions: {
            "answer_question":
{ Args: { "p_answer": string,"p_task_id": string }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: true
        isSetofReturn: false
      } },
"ask_question":
{ Args: { "p_question": string,"p_task_id": string }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: true
        isSetofReturn: false
      } },
"attach_artifact":
{ Args: { "p_content"?: string,"p_media_type"?: string,"p_name": string,"p_sha256"?: string,"p_size_bytes"?: number,"p_task_id": string,"p_uri"?: string }; Returns: {
              "content": string | null,
"created_at": string,
"id": string,
"media_type": string,
"name": string,
"producer": string,
"sha256": string | null,
"size_bytes": number | null,
"task_id": string,
"uri": string | null
            }
                          SetofOptions: {
        from: "*"
        to: "task_artifacts"
        isOneToOne: true
        isSetofReturn: false
      } },
"begin_incarnation":
{ Args: Record<PropertyKey, never>; Returns: Json
                           },
"cancel_task":
{ Args: { "p_reason"?: string,"p_task_id": string }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: true
        isSetofReturn: false
      } },
"chain_usage":
{ Args: { "p_task_id": string }; Returns: {
              "attempts": number,"cached_tokens": number,"cost_usd": number,"input_tokens": number,"model": string,"output_tokens": number,"runtime": string,"tasks": number,"turns": number
            }[]
                           },
"check_claims":
{ Args: { "p_claim_tokens": (string)[],"p_renew"?: boolean,"p_task_ids": (string)[] }; Returns: {
              "current": boolean,"hold_seconds": number,"lease_expires_at": string,"status": Database["public"]['Enums']["task_status"],"task_id": string
            }[]
                           },
"claim_next_tasks":
{ Args: { "p_capabilities"?: (string)[],"p_lease_seconds"?: number,"p_limit"?: number,"p_start"?: boolean }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }[]
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: false
        isSetofReturn: true
      } },
"claim_task":
{ Args: { "p_lease_seconds"?: number,"p_start"?: boolean,"p_task_id": string }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: true
        isSetofReturn: false
      } },
"claimable_tasks":
{ Args: { "p_limit"?: number }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }[]
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: false
        isSetofReturn: true
      } },
"complete_task":
{ Args: { "p_claim_token": string,"p_result"?: Json,"p_task_id": string }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: true
        isSetofReturn: false
      } },
"decline_task":
{ Args: { "p_claim_token": string,"p_reason": string,"p_task_id": string }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: true
        isSetofReturn: false
      } },
"fail_task":
{ Args: { "p_claim_token": string,"p_error": string,"p_problems"?: Json,"p_retry"?: boolean,"p_task_id": string }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: true
        isSetofReturn: false
      } },
"fan_out":
{ Args: { "p_join"?: Json,"p_parent_task_id": string,"p_tasks": Json }; Returns: Json
                           },
"handoff_task":
{ Args: { "p_allow_offline"?: boolean,"p_budget_tokens"?: number,"p_budget_usd"?: number,"p_deadline"?: string,"p_dependency_mode"?: string,"p_depends_on"?: (string)[],"p_description"?: string,"p_expected_outputs"?: Json,"p_idempotency_key"?: string,"p_input_artifacts"?: Json,"p_lease_seconds"?: number,"p_max_attempts"?: number,"p_on_budget_spent"?: string,"p_on_dependency_failure"?: string,"p_parent_task_id"?: string,"p_payload"?: Json,"p_priority"?: Database["public"]['Enums']["task_priority"],"p_required_capabilities"?: (string)[],"p_run_at"?: string,"p_title": string,"p_to_agent"?: string }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: true
        isSetofReturn: false
      } },
"handoff_tasks":
{ Args: { "p_tasks": Json }; Returns: {
              "code": string,"hint": string,"index": number,"message": string,"task_id": string
            }[]
                           },
"issue_agent_token":
{ Args: { "p_agent_id": string,"p_expires_at"?: string }; Returns: string
                           },
"my_tasks":
{ Args: { "p_limit"?: number,"p_statuses"?: (Database["public"]['Enums']["task_status"])[] }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }[]
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: false
        isSetofReturn: true
      } },
"reassign_task":
{ Args: { "p_reason"?: string,"p_task_id": string,"p_to_agent": string }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: true
        isSetofReturn: false
      } },
"record_usage":
{ Args: { "p_cached_tokens"?: number,"p_claim_token": string,"p_cost_usd"?: number,"p_input_tokens"?: number,"p_model": string,"p_output_tokens"?: number,"p_runtime": string,"p_session_id"?: string,"p_task_id": string,"p_turns"?: number }; Returns: {
              "agent_id": string,
"attempt": number,
"cached_tokens": number,
"cost_usd": number | null,
"input_tokens": number,
"model": string,
"output_tokens": number,
"reports": number,
"root_task_id": string,
"runtime": string,
"session_id": string | null,
"started_at": string,
"task_id": string,
"turns": number,
"updated_at": string
            }
                          SetofOptions: {
        from: "*"
        to: "task_runs"
        isOneToOne: true
        isSetofReturn: false
      } },
"register_agent":
{ Args: { "p_capabilities"?: (string)[],"p_display_name"?: string,"p_id": string,"p_max_concurrent"?: number,"p_skills_offered"?: Json,"p_token_expires_at"?: string }; Returns: {
              "agent_id": string,"token_id": string
            }[]
                           },
"reject_task":
{ Args: { "p_reason": string,"p_task_id": string }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: true
        isSetofReturn: false
      } },
"release_task":
{ Args: { "p_claim_token": string,"p_reason"?: string,"p_task_id": string }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: true
        isSetofReturn: false
      } },
"report_and_claim":
{ Args: { "p_capabilities"?: (string)[],"p_claim"?: number,"p_lease_seconds"?: number,"p_outcomes": Json }; Returns: Json
                           },
"report_outcomes":
{ Args: { "p_outcomes": Json }; Returns: {
              "code": string,"hint": string,"message": string,"status": Database["public"]['Enums']["task_status"],"task_id": string
            }[]
                           },
"report_progress":
{ Args: { "p_message": string,"p_percent"?: number,"p_task_id": string }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: true
        isSetofReturn: false
      } },
"retry_task":
{ Args: { "p_task_id": string }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: true
        isSetofReturn: false
      } },
"revoke_agent_tokens":
{ Args: { "p_agent_id": string }; Returns: number
                           },
"schema_level":
{ Args: Record<PropertyKey, never>; Returns: string
                           },
"send_heartbeat":
{ Args: { "p_active"?: boolean,"p_incarnation"?: string,"p_poll_interval"?: string,"p_status_message"?: string }; Returns: {
              "capabilities": (string)[],
"comms_endpoint": string | null,
"created_at": string,
"daily_token_cap": number | null,
"daily_usd_cap": number | null,
"display_name": string | null,
"id": string,
"incarnation": string | null,
"incarnation_heard_at": string | null,
"incarnation_started_at": string | null,
"is_active": boolean,
"last_heartbeat": string | null,
"max_concurrent": number,
"poll_interval": string | null,
"skills_offered": NonNullable<Json>,
"spend_capped_until": string | null,
"status_message": string | null,
"updated_at": string
            }
                          SetofOptions: {
        from: "*"
        to: "agents"
        isOneToOne: true
        isSetofReturn: false
      } },
"set_budget":
{ Args: { "p_on_spent"?: string,"p_task_id": string,"p_tokens"?: number,"p_usd"?: number }; Returns: {
              "created_at": string,
"on_spent": string,
"parent_budget": string | null,
"set_by": string,
"spent_at": string | null,
"task_id": string,
"tokens_limit": number | null,
"tokens_spent": number,
"updated_at": string,
"usd_limit": number | null,
"usd_spent": number
            }
                          SetofOptions: {
        from: "*"
        to: "task_budgets"
        isOneToOne: true
        isSetofReturn: false
      } },
"spend_report":
{ Args: { "p_agent_id"?: string,"p_since"?: string,"p_task_id"?: string }; Returns: {
              "agent_id": string,"cached_tokens": number,"cost_usd": number,"day": string,"input_tokens": number,"model": string,"output_tokens": number,"runs": number
            }[]
                           },
"start_task":
{ Args: { "p_claim_token": string,"p_task_id": string }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: true
        isSetofReturn: false
      } },
"sweep_tasks":
{ Args: Record<PropertyKey, never>; Returns: Json
                           },
"task_ancestors":
{ Args: { "p_task_id": string }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }[]
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: false
        isSetofReturn: true
      } },
"task_budget":
{ Args: { "p_task_id": string }; Returns: Json
                           },
"task_chain":
{ Args: { "p_task_id": string }; Returns: {
              "attempts": number,
"completed_at": string | null,
"created_at": string,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"from_agent": string,
"id": string,
"inputs": NonNullable<Json>,
"outputs": Json | null,
"parent_task_id": string | null,
"producer": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"required_capabilities": (string)[],
"result_status": Json | null,
"root_task_id": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"summary": string | null,
"title": string,
"to_agent": string | null
            }[]
                          SetofOptions: {
        from: "*"
        to: "task_lineage"
        isOneToOne: false
        isSetofReturn: true
      } },
"task_dependencies":
{ Args: { "p_task_id": string }; Returns: {
              "attempts": number,
"budget_id": string | null,
"claim_incarnation": string | null,
"claim_lease": string | null,
"claim_token": string | null,
"claimed_at": string | null,
"claimed_by": string | null,
"completed_at": string | null,
"created_at": string,
"deadline": string | null,
"dependency_mode": string,
"depends_on": (string)[],
"depth": number,
"description": string | null,
"expected_outputs": NonNullable<Json>,
"from_agent": string,
"id": string,
"idempotency_key": string | null,
"input_artifacts": NonNullable<Json>,
"lease_expires_at": string | null,
"lease_seconds": number | null,
"max_attempts": number,
"not_before": string | null,
"on_dependency_failure": string,
"parent_task_id": string | null,
"payload": NonNullable<Json>,
"priority": Database["public"]['Enums']["task_priority"],
"problems": Json | null,
"progress_at": string | null,
"progress_message": string | null,
"progress_percent": number | null,
"recurrence_slot": string | null,
"recurring_id": string | null,
"required_capabilities": (string)[],
"result": Json | null,
"retry_of": string | null,
"root_task_id": string | null,
"run_at": string | null,
"started_at": string | null,
"status": Database["public"]['Enums']["task_status"],
"status_reason": string | null,
"title": string,
"to_agent": string | null,
"traceparent": string | null,
"tracestate": string | null,
"updated_at": string,
"waiting_on": number
            }[]
                          SetofOptions: {
        from: "*"
        to: "task_handoffs"
        isOneToOne: false
        isSetofReturn: true
      } },
"task_inputs":
{ Args: { "p_task_id": string }; Returns: {
              "content": string | null,
"created_at": string,
"id": string,
"media_type": string,
"name": string,
"producer": string,
"sha256": string | null,
"size_bytes": number | null,
"task_id": string,
"uri": string | null
            }[]
                          SetofOptions: {
        from: "*"
        to: "task_artifacts"
        isOneToOne: false
        isSetofReturn: true
      } }
          }
          Enums: {
            "message_kind": "note"|"progress"|"question"|"answer"|"result","task_priority": "low"|"medium"|"high"|"urgent","task_status": "pending"|"claimed"|"in_progress"|"input_required"|"completed"|"failed"|"rejected"|"cancelled"
          }
          CompositeTypes: {
            [_ in never]: never
          }
        }
}

type DatabaseWithoutInternals = Omit<Database, '__InternalSupabase'>

type DefaultSchema = DatabaseWithoutInternals[Extract<keyof Database, "public">]

export type Tables<
  DefaultSchemaTableNameOrOptions extends
    | keyof (DefaultSchema["Tables"] & DefaultSchema["Views"])
    | { schema: keyof DatabaseWithoutInternals },
  TableName extends DefaultSchemaTableNameOrOptions extends {
    schema: keyof DatabaseWithoutInternals
  }
    ? keyof (DatabaseWithoutInternals[DefaultSchemaTableNameOrOptions["schema"]]["Tables"] &
        DatabaseWithoutInternals[DefaultSchemaTableNameOrOptions["schema"]]["Views"])
    : never = never
> = DefaultSchemaTableNameOrOptions extends { schema: keyof DatabaseWithoutInternals }
  ? (DatabaseWithoutInternals[DefaultSchemaTableNameOrOptions["schema"]]["Tables"] &
      DatabaseWithoutInternals[DefaultSchemaTableNameOrOptions["schema"]]["Views"])[TableName] extends {
      Row: infer R
    }
    ? R
    : never
  : DefaultSchemaTableNameOrOptions extends keyof (DefaultSchema["Tables"] & DefaultSchema["Views"])
  ? (DefaultSchema["Tables"] & DefaultSchema["Views"])[DefaultSchemaTableNameOrOptions] extends {
      Row: infer R
    }
    ? R
    : never
  : never

export type TablesInsert<
  DefaultSchemaTableNameOrOptions extends
    | keyof DefaultSchema["Tables"]
    | { schema: keyof DatabaseWithoutInternals },
  TableName extends DefaultSchemaTableNameOrOptions extends {
    schema: keyof DatabaseWithoutInternals
  }
    ? keyof DatabaseWithoutInternals[DefaultSchemaTableNameOrOptions["schema"]]["Tables"]
    : never = never
> = DefaultSchemaTableNameOrOptions extends { schema: keyof DatabaseWithoutInternals }
  ? DatabaseWithoutInternals[DefaultSchemaTableNameOrOptions["schema"]]["Tables"][TableName] extends {
      Insert: infer I
    }
    ? I
    : never
  : DefaultSchemaTableNameOrOptions extends keyof DefaultSchema["Tables"]
  ? DefaultSchema["Tables"][DefaultSchemaTableNameOrOptions] extends {
      Insert: infer I
    }
    ? I
    : never
  : never

export type TablesUpdate<
  DefaultSchemaTableNameOrOptions extends
    | keyof DefaultSchema["Tables"]
    | { schema: keyof DatabaseWithoutInternals },
  TableName extends DefaultSchemaTableNameOrOptions extends {
    schema: keyof DatabaseWithoutInternals
  }
    ? keyof DatabaseWithoutInternals[DefaultSchemaTableNameOrOptions["schema"]]["Tables"]
    : never = never
> = DefaultSchemaTableNameOrOptions extends { schema: keyof DatabaseWithoutInternals }
  ? DatabaseWithoutInternals[DefaultSchemaTableNameOrOptions["schema"]]["Tables"][TableName] extends {
      Update: infer U
    }
    ? U
    : never
  : DefaultSchemaTableNameOrOptions extends keyof DefaultSchema["Tables"]
  ? DefaultSchema["Tables"][DefaultSchemaTableNameOrOptions] extends {
      Update: infer U
    }
    ? U
    : never
  : never

export type Enums<
  DefaultSchemaEnumNameOrOptions extends
    | keyof DefaultSchema["Enums"]
    | { schema: keyof DatabaseWithoutInternals },
  EnumName extends DefaultSchemaEnumNameOrOptions extends {
    schema: keyof DatabaseWithoutInternals
  }
    ? keyof DatabaseWithoutInternals[DefaultSchemaEnumNameOrOptions["schema"]]["Enums"]
    : never = never
> = DefaultSchemaEnumNameOrOptions extends { schema: keyof DatabaseWithoutInternals }
  ? DatabaseWithoutInternals[DefaultSchemaEnumNameOrOptions["schema"]]["Enums"][EnumName]
  : DefaultSchemaEnumNameOrOptions extends keyof DefaultSchema["Enums"]
  ? DefaultSchema["Enums"][DefaultSchemaEnumNameOrOptions]
  : never

export type CompositeTypes<
  PublicCompositeTypeNameOrOptions extends
    | keyof DefaultSchema["CompositeTypes"]
    | { schema: keyof DatabaseWithoutInternals },
  CompositeTypeName extends PublicCompositeTypeNameOrOptions extends {
    schema: keyof DatabaseWithoutInternals
  }
    ? keyof DatabaseWithoutInternals[PublicCompositeTypeNameOrOptions["schema"]]["CompositeTypes"]
    : never = never
> = PublicCompositeTypeNameOrOptions extends { schema: keyof DatabaseWithoutInternals }
  ? DatabaseWithoutInternals[PublicCompositeTypeNameOrOptions["schema"]]["CompositeTypes"][CompositeTypeName]
  : PublicCompositeTypeNameOrOptions extends keyof DefaultSchema["CompositeTypes"]
  ? DefaultSchema["CompositeTypes"][PublicCompositeTypeNameOrOptions]
  : never

export const Constants = {
  "public": {
          Enums: {
            "message_kind": ["note", "progress", "question", "answer", "result"],"task_priority": ["low", "medium", "high", "urgent"],"task_status": ["pending", "claimed", "in_progress", "input_required", "completed", "failed", "rejected", "cancelled"]
          }
        }
} as const
