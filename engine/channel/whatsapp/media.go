package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"google.golang.org/protobuf/proto"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
)

// downloadTimeout bounds one inbound attachment download: the event
// handler waits for it, and WhatsApp holds back the next events meanwhile.
var downloadTimeout = 2 * time.Minute

// errTooLarge is returned by cappedFile when a download passes the cap.
var errTooLarge = errors.New("attachment larger than mediaMaxMb")

// fetchMedia downloads an inbound attachment into MediaDir. The file name
// comes from the message id and the MIME type only, never from the
// sender's file name, so a sender cannot choose a path. A failure is not
// an error of the message: the note says what happened and the message is
// delivered without the file.
func (a *Adapter) fetchMedia(ctx context.Context, cli Client, id string, att *attachment) (engine.Media, string) {
	limit := a.cfg.MediaMaxBytes()
	switch {
	case a.mediaDir == "":
		return engine.Media{}, fmt.Sprintf("[%s not downloaded: no media directory]", att.kind)
	case att.size > uint64(limit):
		return engine.Media{}, fmt.Sprintf("[%s not downloaded: %d MB is over mediaMaxMb %d]", att.kind, att.size>>20, limit>>20)
	}
	mt := cleanMIME(att.mimeType)
	path, err := a.download(ctx, cli, id, att, mt, limit)
	if err != nil {
		a.log.Warn("inbound attachment not downloaded", "id", id, "kind", att.kind, "err", err)
		if errors.Is(err, errTooLarge) {
			return engine.Media{}, fmt.Sprintf("[%s not downloaded: over mediaMaxMb %d]", att.kind, limit>>20)
		}
		return engine.Media{}, fmt.Sprintf("[%s not downloaded: download failed]", att.kind)
	}
	return engine.Media{Path: path, MimeType: mt}, ""
}

func (a *Adapter) download(ctx context.Context, cli Client, id string, att *attachment, mt string, limit int64) (path string, err error) {
	if err := os.MkdirAll(a.mediaDir, 0o700); err != nil {
		return "", fmt.Errorf("media directory: %w", err)
	}
	tmp, err := os.CreateTemp(a.mediaDir, ".wa-*.part") // 0600
	if err != nil {
		return "", fmt.Errorf("media file: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, tmp.Close(), os.Remove(tmp.Name()))
		}
	}()
	dl, err := whatsAppHosted(att.msg)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, downloadTimeout)
	defer cancel()
	// The encrypted download is the plaintext plus at most one padding
	// block and the 10-byte MAC.
	cf := &cappedFile{f: tmp, max: limit + 32}
	if err := cli.DownloadToFile(ctx, dl, cf); err != nil {
		return "", fmt.Errorf("download: %w", err)
	}
	fi, err := tmp.Stat()
	if err != nil {
		return "", fmt.Errorf("media file: %w", err)
	}
	if fi.Size() > limit {
		return "", errTooLarge
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("media file: %w", err)
	}
	final := filepath.Join(a.mediaDir, "wa-"+safeName(id)+extension(mt, att.kind))
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", fmt.Errorf("media file: %w", err)
	}
	return final, nil
}

// cappedFile is the whatsmeow.File a download writes into, refusing to
// grow past max. It is not an *os.File on purpose: io.Copy would use
// (*os.File).ReadFrom and bypass the cap.
type cappedFile struct {
	f   *os.File
	max int64
}

func (c *cappedFile) Read(p []byte) (int, error)                { return c.f.Read(p) }
func (c *cappedFile) ReadAt(p []byte, off int64) (int, error)   { return c.f.ReadAt(p, off) }
func (c *cappedFile) Seek(off int64, whence int) (int64, error) { return c.f.Seek(off, whence) }
func (c *cappedFile) Truncate(size int64) error                 { return c.f.Truncate(size) }
func (c *cappedFile) Stat() (os.FileInfo, error)                { return c.f.Stat() }

func (c *cappedFile) Write(p []byte) (int, error) {
	pos, err := c.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	if pos+int64(len(p)) > c.max {
		return 0, errTooLarge
	}
	return c.f.Write(p)
}

func (c *cappedFile) WriteAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > c.max {
		return 0, errTooLarge
	}
	return c.f.WriteAt(p, off)
}

var _ whatsmeow.File = (*cappedFile)(nil)

// safeName keeps the letters and digits of a message id (WhatsApp ids are
// hex, but a sender's client chooses them).
func safeName(id string) string {
	var b strings.Builder
	for _, r := range id {
		if r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' {
			b.WriteRune(r)
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() == 0 {
		return "media"
	}
	return b.String()
}

// cleanMIME returns a well-formed MIME type without parameters ("audio/ogg;
// codecs=opus" → "audio/ogg"), or application/octet-stream.
func cleanMIME(s string) string {
	mt, _, err := mime.ParseMediaType(s)
	if err != nil || !strings.Contains(mt, "/") {
		return "application/octet-stream"
	}
	return mt
}

// extension maps the types WhatsApp carries to a file extension; the
// system's mime table is not consulted, so names are the same on every box.
func extension(mt, kind string) string {
	switch mt {
	case "image/jpeg":
		return ".jpg"
	case "image/png":
		return ".png"
	case "image/webp":
		return ".webp"
	case "image/gif":
		return ".gif"
	case "video/mp4":
		return ".mp4"
	case "video/3gpp":
		return ".3gp"
	case "audio/ogg":
		return ".ogg"
	case "audio/mpeg":
		return ".mp3"
	case "audio/mp4", "audio/aac":
		return ".m4a"
	case "audio/amr":
		return ".amr"
	case "application/pdf":
		return ".pdf"
	case "text/plain":
		return ".txt"
	case "application/zip":
		return ".zip"
	}
	return ".bin"
}

// mediaKind is how an outbound file is sent.
type mediaKind int

const (
	kindDocument mediaKind = iota
	kindImage
	kindVideo
	kindAudio
)

// captioned reports whether the message type has a caption.
func (k mediaKind) captioned() bool { return k != kindAudio }

// mediaFile is an outbound attachment read from disk.
type mediaFile struct {
	path     string
	data     []byte
	mimeType string
	kind     mediaKind
}

// openMedia reads an outbound attachment. A missing file, a directory or
// a file over mediaMaxMb can never be sent: channel.Permanent.
func (a *Adapter) openMedia(md engine.Media) (mediaFile, error) {
	limit := a.cfg.MediaMaxBytes()
	fi, err := os.Stat(md.Path)
	if err != nil {
		return mediaFile{}, channel.Permanent(fmt.Errorf("whatsapp: attachment: %w", err))
	}
	if !fi.Mode().IsRegular() {
		return mediaFile{}, channel.Permanent(fmt.Errorf("whatsapp: attachment %s is not a regular file", md.Path))
	}
	if fi.Size() > limit {
		return mediaFile{}, channel.Permanent(fmt.Errorf("whatsapp: attachment %s is %d MB, over mediaMaxMb %d", md.Path, fi.Size()>>20, limit>>20))
	}
	data, err := os.ReadFile(md.Path)
	if err != nil {
		return mediaFile{}, fmt.Errorf("whatsapp: attachment: %w", err)
	}
	if int64(len(data)) > limit {
		return mediaFile{}, channel.Permanent(fmt.Errorf("whatsapp: attachment %s grew over mediaMaxMb %d", md.Path, limit>>20))
	}
	mt := md.MimeType
	if mt == "" {
		mt = mime.TypeByExtension(strings.ToLower(filepath.Ext(md.Path)))
	}
	if mt == "" {
		mt = http.DetectContentType(data)
	}
	mt = cleanMIME(mt)
	return mediaFile{path: md.Path, data: data, mimeType: mt, kind: kindOf(mt)}, nil
}

// kindOf picks the message type. Only the formats the WhatsApp apps show
// inline go as image/video/audio; everything else (webp, gif, mkv …) goes
// as a document, which always arrives intact.
func kindOf(mt string) mediaKind {
	switch mt {
	case "image/jpeg", "image/png":
		return kindImage
	case "video/mp4", "video/3gpp":
		return kindVideo
	}
	if strings.HasPrefix(mt, "audio/") {
		return kindAudio
	}
	return kindDocument
}

// uploadMedia uploads f and returns the message carrying it.
func (a *Adapter) uploadMedia(ctx context.Context, cli Client, f mediaFile, caption string, quote *waE2E.ContextInfo, asVoice bool) (*waE2E.Message, error) {
	var mt whatsmeow.MediaType
	switch f.kind {
	case kindImage:
		mt = whatsmeow.MediaImage
	case kindVideo:
		mt = whatsmeow.MediaVideo
	case kindAudio:
		mt = whatsmeow.MediaAudio
	default:
		mt = whatsmeow.MediaDocument
	}
	up, err := cli.Upload(ctx, f.data, mt)
	if err != nil {
		var disc *whatsmeow.DisconnectedError
		if errors.Is(err, whatsmeow.ErrNotConnected) || errors.As(err, &disc) {
			return nil, fmt.Errorf("whatsapp: upload %s: %w: %w", filepath.Base(f.path), channel.ErrNotConnected, err)
		}
		return nil, fmt.Errorf("whatsapp: upload %s: %w", filepath.Base(f.path), err)
	}
	var capt *string
	if caption != "" {
		capt = proto.String(caption)
	}
	switch f.kind {
	case kindImage:
		return &waE2E.Message{ImageMessage: &waE2E.ImageMessage{
			URL: proto.String(up.URL), DirectPath: proto.String(up.DirectPath), MediaKey: up.MediaKey,
			FileEncSHA256: up.FileEncSHA256, FileSHA256: up.FileSHA256, FileLength: proto.Uint64(up.FileLength),
			Mimetype: proto.String(f.mimeType), Caption: capt, ContextInfo: quote,
		}}, nil
	case kindVideo:
		return &waE2E.Message{VideoMessage: &waE2E.VideoMessage{
			URL: proto.String(up.URL), DirectPath: proto.String(up.DirectPath), MediaKey: up.MediaKey,
			FileEncSHA256: up.FileEncSHA256, FileSHA256: up.FileSHA256, FileLength: proto.Uint64(up.FileLength),
			Mimetype: proto.String(f.mimeType), Caption: capt, ContextInfo: quote,
		}}, nil
	case kindAudio:
		mimeType := f.mimeType
		if asVoice && mimeType == "audio/ogg" {
			// The apps play voice notes as Opus in Ogg and say so.
			mimeType = "audio/ogg; codecs=opus"
		}
		return &waE2E.Message{AudioMessage: &waE2E.AudioMessage{
			URL: proto.String(up.URL), DirectPath: proto.String(up.DirectPath), MediaKey: up.MediaKey,
			FileEncSHA256: up.FileEncSHA256, FileSHA256: up.FileSHA256, FileLength: proto.Uint64(up.FileLength),
			Mimetype: proto.String(mimeType), PTT: proto.Bool(asVoice), ContextInfo: quote,
		}}, nil
	default:
		return &waE2E.Message{DocumentMessage: &waE2E.DocumentMessage{
			URL: proto.String(up.URL), DirectPath: proto.String(up.DirectPath), MediaKey: up.MediaKey,
			FileEncSHA256: up.FileEncSHA256, FileSHA256: up.FileSHA256, FileLength: proto.Uint64(up.FileLength),
			Mimetype: proto.String(f.mimeType), FileName: proto.String(filepath.Base(f.path)),
			Title: proto.String(filepath.Base(f.path)), Caption: capt, ContextInfo: quote,
		}}, nil
	}
}

// recentSize bounds the recent-message cache: enough for the replies and
// reactions of a busy hour, small enough to not matter on a Pi.
const recentSize = 1024

// recentMsg is what quoting and reacting need to know about a message.
type recentMsg struct {
	chat   types.JID
	sender types.JID
	fromMe bool
	text   string
}

// recentCache remembers the last recentSize messages by id (inbound ones
// and our sends), evicting the oldest.
type recentCache struct {
	mu    sync.Mutex
	m     map[string]recentMsg
	order []string
	next  int
}

func newRecentCache(n int) *recentCache {
	return &recentCache{m: make(map[string]recentMsg, n), order: make([]string, n)}
}

func (c *recentCache) add(id string, r recentMsg) {
	if id == "" {
		return
	}
	const maxText = 1024 // a quote is a preview
	if len(r.text) > maxText {
		cut := maxText
		for cut > 0 && !utf8.RuneStart(r.text[cut]) {
			cut--
		}
		r.text = r.text[:cut]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[id]; ok {
		c.m[id] = r
		return
	}
	if old := c.order[c.next]; old != "" {
		delete(c.m, old)
	}
	c.order[c.next] = id
	c.next = (c.next + 1) % len(c.order)
	c.m[id] = r
}

func (c *recentCache) get(id string) (recentMsg, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[id]
	return r, ok
}

// whatsAppHosted returns msg for download from WhatsApp's own media
// servers only. whatsmeow fetches a message's URL field when it is set —
// any URL the sender wrote, with plain http.Get and redirects, and keeps
// an unencrypted body when the message carries no keys — so a stranger
// could make the gateway fetch LAN addresses. The returned message hides
// the URL (whatsmeow then downloads by DirectPath from its media hosts),
// and a message without the keys of real encrypted media is refused.
func whatsAppHosted(msg whatsmeow.DownloadableMessage) (whatsmeow.DownloadableMessage, error) {
	if !strings.HasPrefix(msg.GetDirectPath(), "/") || len(msg.GetMediaKey()) != 32 || len(msg.GetFileEncSHA256()) != 32 || len(msg.GetFileSHA256()) != 32 {
		return nil, errors.New("download: not encrypted WhatsApp media (no direct path or keys)")
	}
	mt := whatsmeow.GetMediaType(msg)
	if mt == "" {
		return nil, fmt.Errorf("download: unknown media type %T", msg)
	}
	return pathOnly{DownloadableMessage: msg, mt: mt}, nil
}

// pathOnly is a downloadable message without its URL (see whatsAppHosted).
type pathOnly struct {
	whatsmeow.DownloadableMessage
	mt whatsmeow.MediaType
}

func (p pathOnly) GetMediaType() whatsmeow.MediaType { return p.mt }
