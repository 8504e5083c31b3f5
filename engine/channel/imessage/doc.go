// Package imessage is the iMessage channel adapter (channels.imessage): it
// runs `imsg rpc` on the Mac that is signed in to Messages — as a child
// process, or over ssh from a Pi when remoteHost is set — and turns its
// JSON-RPC stream into engine.Inbound messages and channel.Outbound
// messages into imsg sends. channels.imessage.backend "bluebubbles" selects
// the BlueBubbles backend instead (package bluebubbles; see Open).
//
// # What it is based on
//
// openclaw/imsg docs/rpc.md and docs/json.md (the JSON-RPC surface and the
// Message/Attachment objects), imsg's Sources/imsg/Commands/RpcCommand.swift
// (`imsg rpc [--db path]`) and RPCServer+SendHandlers.swift (the keys send
// and send.tracked accept), and OpenClaw's docs/channels/imessage.md and
// src/imessage/{client,send,probe}.ts (config keys, `rpc --db`, chats.list
// as a probe, chat_id:/chat_guid:/chat_identifier: targets). Facts used:
//
//   - Framing: one JSON object per line each way; jsonrpc "2.0"; params a
//     named object; every method rejects unknown keys and wrong types with
//     -32602, so only documented keys are sent, integers as JSON integers.
//   - initialize {protocol_version: 1} returns the readiness snapshot
//     (database.ready, database.error — redacted by imsg —, methods); an
//     imsg without it answers -32601 and is probed with chats.list
//     {limit: 1}, as OpenClaw does.
//   - watch.subscribe {since_rowid?, attachments?} → {subscription};
//     since_rowid > 0 resumes exclusively after that rowid, omitted starts
//     at the current tail. Each new message arrives as a `message`
//     notification {subscription, message}; the message's `cursor` (live
//     watch only) is the monotonic resume point, else its `id` (rowid).
//     Delivery is at-least-once. A full buffer ends the subscription with
//     a terminal `watch.overflow` notification.
//   - Message fields used: id, cursor, chat_id, chat_identifier, chat_guid,
//     is_group, guid, reply_to_guid, sender, sender_name, is_from_me, text,
//     created_at, attachments[]. An attachment, as imsg's RPC encoder
//     writes it (OutputModels.swift AttachmentPayload, docs/attachments.md):
//     filename (chat.db's "~/Library/Messages/Attachments/…"),
//     transfer_name, uti, mime_type, total_bytes, is_sticker, missing and
//     original_path (filename with "~" expanded to the home of the user
//     imsg runs as); docs/json.md calls the last two byte_size and path.
//     All of these forms are read (attachments.go).
//   - send {to | chat_id | chat_identifier | chat_guid, text?, file?,
//     service? (imessage|sms|auto), region?} → {ok, id?, guid?}; one file
//     per call. send.tracked adds attempt_id (a UUID that becomes the
//     message GUID; text only, bridge only, advertised in methods) and
//     message.send_status {guid} tells whether that GUID exists.
//   - Errors: -32700/-32600/-32601/-32602 are the caller's fault; -32001
//     means the send may have happened (data.retry_safe false: do not
//     retry); -32002 database unavailable and -32000 busy are retryable;
//     -32004 blocks every later send until imsg restarts.
//   - imsg exits cleanly when its stdin closes; stderr is diagnostics only.
//
// # Choices where the sources leave room
//
//   - ChatID of an inbound message is imsg's chat_id in decimal ("42"), its
//     "preferred routing handle" and what OpenClaw keys
//     channels.imessage.groups by. Send accepts that, OpenClaw's prefixed
//     targets (chat_id:, chat_guid:, chat_identifier:, imessage:, sms:,
//     auto:) and bare handles. SenderID is the sender handle exactly as
//     imsg sent it (Messages' raw handle.id: "+15551234567", an e-mail
//     address, a short code): nothing is lower-cased or stripped here,
//     the access layer alone makes ids comparable (access.Canonical).
//   - The cursor (Store key "imsg.cursor": rowid and database path) is
//     advanced only after Deliver returned nil, and also past skipped
//     messages (is_from_me echoes, reactions, empty rows). The first run
//     starts at the tail: no history. Notifications with a rowid at or
//     below the subscribe cursor are dropped as replays. A changed database
//     path discards the cursor (imsg: rowids belong to one chat.db).
//   - A Deliver error, a watch.overflow, imsg exiting or ssh dying end Run
//     with an error; the supervisor restarts it and the cursor resumes.
//     Cancelling ctx closes imsg's stdin (kill after 3 s); Run returns nil.
//   - Idempotency: plain `send` has no client id, so imsg cannot
//     deduplicate it and the repeat window is the send call (a retry after
//     a lost response can send twice). When imsg advertises send.tracked
//     and the message is text to a chat target, the attempt_id is a UUID
//     derived from Outbound.IdempotencyKey, and message.send_status is
//     asked first: a retry of a delivered message returns its receipt
//     instead of sending again.
//   - Errors imsg calls invalid (-326xx except internal) and sends it calls
//     unsafe to retry are channel.Permanent; everything else is retried.
//     Outbound attachments larger than mediaMaxMb, missing, or not regular
//     files are permanent failures; media with only a URL is appended to
//     the text.
//   - remoteHost: the adapter runs `ssh -T -o BatchMode=yes -o
//     ServerAliveInterval=15 -o ConnectTimeout=15 -- host 'cliPath' 'rpc'
//     '--db' 'dbPath'` itself, every remote word single-quoted (a leading
//     ~/ is left to the remote shell). Inbound attachments are then
//     fetched over ssh by a short sh script that resolves the path and the
//     root on the Mac (cd -P), refuses a file outside the root or a
//     symlink, and cats it (at most mediaMaxMb).
//     Outbound attachments over remoteHost are not supported yet (a
//     permanent error). OpenClaw instead expects cliPath to be an ssh
//     wrapper script and uses remoteHost only for scp; such a wrapper with
//     remoteHost empty works here too.
//   - Bounds: 8 MiB per stdout line (longer lines skipped), 4096 queued
//     notifications (more: reconnect from the cursor), 512 bytes per
//     stderr line and the last 8 kept for the error; 1 MiB text, 100
//     attachments per message.
//   - Inbound attachments (includeAttachments) are copied into
//     Deps.MediaDir and handed on as the copy, never as the Mac's own
//     file: the gateway deletes the media of messages nobody reads, and
//     the model's tools may act on them. Only a regular file inside an
//     attachment root is copied (DefaultAttachmentRoots — OpenClaw's
//     /Users/*/Library/Messages/Attachments and ~/Library/Messages/
//     Attachments — plus attachmentRoots, or remoteAttachmentRoots over
//     ssh): a path with . or .., control characters or outside the roots
//     is refused, the root is opened as an os.Root (no symlink out of it)
//     and the file with O_NOFOLLOW|O_NONBLOCK; anything bigger than
//     mediaMaxMb (by total_bytes or by the file itself) is skipped. The
//     copy's name comes from the message guid, never from the sender's
//     file name. What is left out is logged and noted in the text
//     ("[attachment not included: refused]"). converted_path is not used
//     (conversion is never asked for).
//   - Not used: typing, tapbacks and other bridge methods, reply_to on
//     sends (imsg sends replies only through its bridge), messages.after
//     catch-up (since_rowid on the subscription does the same job).
package imessage
