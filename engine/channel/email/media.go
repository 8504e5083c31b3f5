package email

import (
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/openclaw-edge/edge/engine"
)

// saveAttachments writes p's attachments under MediaDir and returns them
// as engine.Media, with notes for the text about what was left out.
func (a *Adapter) saveAttachments(p Parsed, validity, uid uint32) ([]engine.Media, []string) {
	var notes []string
	if len(p.Attachments) == 0 && p.Dropped == 0 {
		return nil, nil
	}
	if a.deps.MediaDir == "" {
		n := len(p.Attachments) + p.Dropped
		return nil, []string{fmt.Sprintf("[%d attachment(s) not kept: no media directory is configured]", n)}
	}
	if err := os.MkdirAll(a.deps.MediaDir, 0o700); err != nil {
		a.log.Warn("email: media dir", "err", err)
		return nil, []string{fmt.Sprintf("[%d attachment(s) could not be saved]", len(p.Attachments))}
	}
	var media []engine.Media
	failed := 0
	for i, att := range p.Attachments {
		name := sanitizeFilename(att.Filename, att.MimeType)
		base := fmt.Sprintf("email-%d-%d-%d-%s", validity, uid, i+1, name)
		path, err := writeExclusive(a.deps.MediaDir, base, att.Data)
		if err != nil {
			a.log.Warn("email: save attachment", "uid", uid, "err", err)
			failed++
			continue
		}
		media = append(media, engine.Media{Path: path, MimeType: att.MimeType})
	}
	if failed > 0 {
		notes = append(notes, fmt.Sprintf("[%d attachment(s) could not be saved]", failed))
	}
	if p.Dropped > 0 {
		notes = append(notes, fmt.Sprintf("[%d attachment(s) left out: too many or too large]", p.Dropped))
	}
	return media, notes
}

// writeExclusive creates dir/base with O_EXCL (never overwriting, never
// following a planted symlink); when the name exists (a message delivered
// again after a crash) it tries base-2, base-3, ….
func writeExclusive(dir, base string, data []byte) (string, error) {
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	for n := 1; n <= 100; n++ {
		name := base
		if n > 1 {
			name = fmt.Sprintf("%s-%d%s", stem, n, ext)
		}
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, werr := f.Write(data)
		cerr := f.Close()
		if werr != nil || cerr != nil {
			os.Remove(path)
			return "", fmt.Errorf("write %s: %w", path, errors.Join(werr, cerr))
		}
		return path, nil
	}
	return "", fmt.Errorf("no free name for %s in %s", base, dir)
}

// sanitizeFilename keeps a safe base name: letters, digits, '.', '-', '_'
// (others become '_'), no leading dots, at most 80 bytes, with an extension
// from the MIME type when there is none.
func sanitizeFilename(name, mimeType string) string {
	name = filepath.Base(strings.ReplaceAll(name, "\\", "/"))
	var b strings.Builder
	for _, r := range name {
		switch {
		case r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)), r == '.', r == '-', r == '_':
			b.WriteRune(r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.TrimLeft(b.String(), "._")
	if s == "" || s == "_" {
		s = "attachment"
	}
	if filepath.Ext(s) == "" {
		if ext, ok := commonExt[strings.ToLower(mimeType)]; ok {
			s += ext
		} else if exts, _ := mime.ExtensionsByType(mimeType); len(exts) > 0 {
			s += exts[0]
		}
	}
	if len(s) > 80 {
		ext := filepath.Ext(s)
		if len(ext) > 10 {
			ext = ""
		}
		s = capBytes(s[:len(s)-len(ext)], 80-len(ext)) + ext
	}
	return s
}

// commonExt picks the usual extension where mime.ExtensionsByType would
// pick an odd one (".asc" for text/plain, ".jfif" for JPEG).
var commonExt = map[string]string{
	"text/plain":      ".txt",
	"text/html":       ".html",
	"text/calendar":   ".ics",
	"image/jpeg":      ".jpg",
	"image/png":       ".png",
	"image/gif":       ".gif",
	"application/pdf": ".pdf",
	"audio/mpeg":      ".mp3",
	"audio/ogg":       ".ogg",
	"video/mp4":       ".mp4",
	"message/rfc822":  ".eml",
}
