// Package telegram is the Telegram channel adapter (docs/design.md §8): a
// bot account on Telegram's Bot API, reached by long polling — a home box
// needs no public address and no webhook. Built on gotgbot
// (github.com/PaulSonOfLars/gotgbot/v2, MIT, no dependencies, its types and
// methods generated from the Bot API's documentation): of the maintained
// Bot API libraries the module proxy serves, the one that exposes
// getUpdates itself (go-telegram/bot hides it in its own polling loop,
// which confirms updates before they are handled; telego brings fasthttp
// and sonic; go-telegram-bot-api is unmaintained since 2021). Linked into
// the gateway it adds 1.15 MB to the stripped binary, 0.025 ms of init
// and 0.35 MB of idle RSS to a box without Telegram (docs/benchmarks.md;
// -tags notelegram leaves it out); nothing runs until an account is
// configured. Its HTTP client is ours (client.go): the token never appears
// in an error or a log, answers are size-capped.
//
// What it does, with OpenClaw's channels.telegram keys (Config):
//
//   - Receiving: getUpdates long polls (25 s; a poll that outlives its
//     deadline is a dead link). Each update is recorded together with the
//     next offset in one transaction (channel.CursorInbox), and the offset
//     Telegram is asked with is the recorded one: an update is confirmed
//     to Telegram only once it is stored here, so a crash (even SIGKILL)
//     neither loses nor repeats one; an update Telegram repeats is also
//     dropped by the inbox's dedup. 429s wait retry_after; network loss
//     backs off from 1 to 30 s; a 409 (another poller, or a webhook) is
//     reported and retried every 30 s. At start: getMe (a refused token
//     is channel.ErrConfig: reported once, no crash loop), deleteWebhook,
//     setMyCommands (/new, /stop, /help).
//   - Ids: the sender is the user's numeric id, the chat id the chat's;
//     a forum topic's thread id is engine.Inbound.Topic (its own session,
//     …:group:<chatId>:topic:<threadId>) and the reply goes to the same
//     topic. Message ids are "<bot id>:<chat id>:<message id>" (unique
//     across chats and accounts: the inbox dedups by them).
//   - Inbound: text or caption; a reply's quoted text (a reply to the bot
//     counts as a mention, as do @bot and /cmd@bot); the largest size of a
//     photo, documents, voice notes and audio downloaded into the account's
//     media directory up to mediaMaxMb (default 5 MB; larger ones are
//     noted in the text); edits are ignored (the original was answered),
//     other bots and channel posts too.
//   - Outbound: Markdown converted to Telegram's HTML subset (html.go),
//     everything escaped; a message Telegram refuses as HTML is sent
//     again as plain text; a chunk over 4,096 UTF-16 units is split;
//     link previews off; typing shown while a turn runs; media uploaded
//     as photo, voice note, audio or document.
//   - streamMode partial (the default, as OpenClaw's): a preview message
//     edited as the reply grows, once a second (every 3 s in groups), the
//     final reply edited into it (stream.go).
//   - Buttons: the gateway's approval and pairing notices carry inline
//     buttons; a press is answered at once and handed on as its command
//     with engine.Inbound.Button set — the gateway lets only an owner's
//     press do anything, and says when a button is stale.
//
// Choices where OpenClaw's documentation is silent: replyToMode "first"
// quotes the answered message on a reply's first message (groups always,
// as the gateway does for every channel), "off" never, "all" is read as
// "first"; a photo over 10 MB is sent as a document.
package telegram
