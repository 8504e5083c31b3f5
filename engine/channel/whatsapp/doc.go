// Package whatsapp is the WhatsApp channel adapter (docs/design.md §8): it links
// an account as a WhatsApp Web device with go.mau.fi/whatsmeow, turns
// WhatsApp messages into engine.Inbound and channel.Outbound into WhatsApp
// messages. Access control, routing, dedup and retries are the gateway's.
//
// # Construction
//
//	a, err := whatsapp.New(cfg, whatsapp.Deps{
//		Account:   "default",
//		StorePath: filepath.Join(stateDir, "whatsapp", "default.db"),
//		Store:     kv,        // channel.Store of the account
//		MediaDir:  filepath.Join(stateDir, "media", "whatsapp", "default"),
//		Logger:    log,
//	})
//
// It implements channel.Adapter, Linker (QR or pairing-code login, logout),
// Typer, Reactor and MediaSender.
//
// # Device store
//
// whatsmeow's sqlstore (the Signal sessions, prekeys, app state of the
// linked device) lives in its own SQLite file (StorePath, 0600, directory
// 0700) through the pure-Go modernc.org/sqlite driver, so the gateway
// cross-compiles with CGO_ENABLED=0. dbutil accepts any dialect name
// starting with "sqlite", so modernc's "sqlite" driver is used as is. The
// DSN enables foreign keys (whatsmeow refuses to upgrade without them), WAL,
// a 10 s busy timeout and immediate transactions. One account, one file,
// one device (GetFirstDevice).
//
// # Version
//
// Every Run and Login asks web.whatsapp.com for the current client
// revision (whatsmeow.GetLatestVersion, 10 s timeout) and announces it
// (store.SetWAVersion, plus the login payload's AppVersion, which
// SetWAVersion does not update in this whatsmeow); when that fails, the
// version pinned in whatsmeow is used. Status.Detail names the version and
// its source, and says so when the server rejected the client as outdated
// (events.ClientOutdated). The linked device shows as "OpenClaw Edge" on
// the phone.
//
// # Inbound
//
// Convert is a pure function from *events.Message to engine.Inbound; its
// doc lists what is delivered and what is not (own echoes, status
// broadcasts, newsletters, reactions, revokes, edits and other protocol
// messages, stickers, polls, locations and contacts are not). Choices:
//   - ChatID is the chat JID without device ("<digits>@s.whatsapp.net",
//     "<id>@g.us", "<lid>@lid"); a broadcast-list message belongs to the
//     direct chat with its sender.
//   - SenderID is "+<digits>" (E.164) whenever WhatsApp gives us the
//     sender's number: the sender JID, its alternative address on
//     LID-addressed messages, or the adapter's LID→number mapping from the
//     device store; otherwise the LID JID ("<lid>@lid"). Mentions use the
//     same form, so one person has one id in SenderID and Mentions.
//   - Mentioned is set when our own number or LID is among the mentioned
//     JIDs, or when the message replies to one of ours.
//   - ReplyTo is the quoted message's id, Quoted its text (or a
//     "<media:kind>" placeholder).
//   - Media without a caption gets OpenClaw's "<media:image>" style text.
//     The adapter downloads image, video, document and audio attachments
//     into MediaDir as "wa-<message id><ext>" (never the sender's file
//     name), capped by mediaMaxMb both by the declared size and while
//     writing; a failed or refused download still delivers the message,
//     with a bracketed note in the text.
//   - selfChatMode: messages the owner types in the "message yourself"
//     chat are delivered (SenderID is our own number); our own sends echoed
//     back are recognised by id and dropped; the owner's other messages
//     stay out.
//
// Delivery and the cursor: whatsmeow runs with SynchronousAck and the
// decrypted-event buffer. A message is acknowledged to WhatsApp only after
// Inbox.Deliver returned nil; when Deliver fails the handler reports
// failure, the message stays unacknowledged, Run ends with an error, and
// after the supervisor's restart the server delivers it again (the buffer
// in the device store lets whatsmeow decrypt it again). WhatsApp's offline
// queue is therefore the cursor, and Deps.Store is not needed. History
// sync blobs are never turned into inbound messages, so old history never
// arrives as new. After a successful Deliver the message is marked read
// when sendReadReceipts is on (default).
//
// # Outbound
//
// Send parses ChatID as a JID or an E.164 number ("+15551234567"); an
// invalid one, an empty message, a missing attachment or one over
// mediaMaxMb is channel.Permanent. Text is a plain Conversation, or an
// ExtendedTextMessage whose ContextInfo quotes ReplyTo (the quoted text and
// author come from a cache of the last 1024 messages seen or sent; older
// messages are quoted by id alone). Each attachment is its own message
// (jpeg/png as image, mp4/3gpp as video, audio/* as audio — a voice note
// (PTT) with AsVoice — anything else as a document named after the file);
// the text is the first one's caption, or a message of its own before a
// voice note. Media given only as a URL is appended to the text as a link:
// the adapter does not fetch URLs.
//
// Message ids: part i of an outbound message gets
// MessageID(account, IdempotencyKey, i) = "3EB0" + 18 hex digits of a
// SHA-256, WhatsApp Web's own format, so an outbox retry resends the same
// id. WhatsApp does not document what it does with a repeated id, and its
// server does not reject one; the phone apps keep messages keyed by (chat,
// sender, id) and show a repeat once, which is what makes the retry safe
// for people on the official apps (other third-party clients may show it
// twice). There is no repeat window to respect: the id stays the message's
// for good. The receipt carries part 0's id. Not connected (Run not
// running, or whatsmeow reconnecting) is channel.ErrNotConnected, for the
// outbox to retry.
//
// # Connection, reconnects and the watchdog
//
// whatsmeow's auto-reconnect handles transient drops: it keeps the client
// and reconnects within seconds, so a Disconnected event does not end Run.
// Permanent disconnects do: LoggedOut ends Run with an error wrapping
// channel.ErrLoggedOut (the supervisor parks it until a new login);
// StreamReplaced (a second client with the same keys), TemporaryBan,
// ClientOutdated and other connect failures end it with an error the
// supervisor retries with backoff.
//
// The watchdog tracks the transport (Connected/Disconnected, keepalive
// timeouts and recoveries) and the message flow (the time of the last
// event of any kind) separately, and checks every 15 s:
//   - transport down, or keepalives failing, for 5 minutes (past
//     whatsmeow's own 3-minute keepalive recovery): Run returns an error,
//     so the supervisor restarts it with a fresh client and backoff, and
//     the owner hears the link failed;
//   - transport up but nothing received for 30 minutes (the half-dead
//     WhatsApp Web link: keepalives answered, messages no longer pushed;
//     OpenClaw's watchdog uses the same 30 minutes): reconnect in place,
//     silently. A quiet account is reconnected every half hour, which is
//     cheap, and the reconnect's own events prove the link.
//
// Status.Detail shows both: "transport up since …; last event …", the
// number of watchdog reconnects, and the client version.
//
// Presence: on connect the adapter sends "available" (typing indicators
// and receipts show as from a foreground client), except in selfChatMode,
// where the phone is the owner's and an available linked device would
// silence its notifications.
//
// # Login and logout
//
// Login (which refuses while Run holds the account, or when a device is
// already linked) emits QR codes (WhatsApp's own schedule: about 160 s in
// all) or, with LoginOptions.Phone, one pairing code; it returns after the
// pair success and the first authenticated connection (at most 60 s), with
// Done and Self "+<number>". The gateway should then restart the
// supervisor. Logout tells WhatsApp to drop the device (through Run's
// connection when running, which then ends with ErrLoggedOut) and deletes
// it from the store; when WhatsApp cannot be reached the device is still
// deleted here, and the error tells the owner to remove it on the phone.
//
// # Testing from other packages
//
// WhatsApp's servers can be neither reached nor faithfully faked, so the
// adapter is faked at its send interface (Client; with connecting and
// event registration, Conn) and nowhere else: Deps.Dial hands Run a Conn
// in place of the whatsmeow client, and Run still opens the real device
// store and drives the Conn as it drives whatsmeow's. Package whatsapptest
// has the fake Conn (it records sends and dispatches real whatsmeow
// events) and links a device in a device store.
package whatsapp
