package imessage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/openclaw-edge/edge/engine"
)

// imsgAttachment is one entry of a message's attachments array. imsg's RPC
// encoder (Sources/imsg/OutputModels.swift AttachmentPayload, and
// docs/attachments.md) writes filename, transfer_name, uti, mime_type,
// total_bytes, is_sticker, original_path and missing (plus
// converted_path/converted_mime_type, only when conversion was asked for,
// which this adapter never does); docs/json.md names the size byte_size
// and the path `path`. Every form is read; unknown fields are ignored.
type imsgAttachment struct {
	// Filename is chat.db's attachment.filename, usually
	// "~/Library/Messages/Attachments/xx/yy/<guid>/<name>".
	Filename     string `json:"filename"`
	TransferName string `json:"transfer_name"` // the sender's file name: never used as a path
	UTI          string `json:"uti"`
	MimeType     string `json:"mime_type"`
	TotalBytes   int64  `json:"total_bytes"`
	ByteSize     int64  `json:"byte_size"`
	IsSticker    bool   `json:"is_sticker"`
	Missing      bool   `json:"missing"`
	// OriginalPath is Filename with "~" expanded to the home of the user
	// imsg runs as (imsg's AttachmentResolver); Path is docs/json.md's
	// name for the same.
	OriginalPath string `json:"original_path"`
	Path         string `json:"path"`
}

// source is where the file is on the Mac: original_path, else path, else
// the raw filename when it is a path ("" when there is none).
func (at *imsgAttachment) source() string {
	switch {
	case at.OriginalPath != "":
		return at.OriginalPath
	case at.Path != "":
		return at.Path
	case strings.HasPrefix(at.Filename, "/"), strings.HasPrefix(at.Filename, "~/"):
		return at.Filename
	}
	return ""
}

// size is the size imsg reports (total_bytes or byte_size). It is only a
// first check: the copy itself is capped.
func (at *imsgAttachment) size() int64 { return max(at.TotalBytes, at.ByteSize) }

// DefaultAttachmentRoots are where Messages keeps received attachments:
// OpenClaw's default root, and the home of the user imsg runs as (which
// need not be under /Users). attachmentRoots and remoteAttachmentRoots add
// to them, as in OpenClaw; "*" matches one path element.
var DefaultAttachmentRoots = []string{"/Users/*/Library/Messages/Attachments", "~/Library/Messages/Attachments"}

// maxPathBytes bounds an attachment path (PATH_MAX is 1024 on macOS).
const maxPathBytes = 4096

// Reasons an attachment is not handed on; each becomes a note in the text.
var (
	errAttachmentMissing  = errors.New("the file is not on the Mac")
	errAttachmentRefused  = errors.New("refused")
	errAttachmentTooLarge = errors.New("over mediaMaxMb")
)

// validateRoots checks attachmentRoots / remoteAttachmentRoots patterns.
func validateRoots(key string, roots []string) error {
	for i, r := range roots {
		if err := validateRoot(r); err != nil {
			return fmt.Errorf("%s[%d]: %q %w", key, i, r, err)
		}
	}
	return nil
}

func validateRoot(r string) error {
	if strings.ContainsFunc(r, unicode.IsControl) {
		return errors.New("contains control characters")
	}
	rest, ok := strings.CutPrefix(r, "~/")
	if !ok {
		if rest, ok = strings.CutPrefix(r, "/"); !ok {
			return errors.New("is not an absolute path or ~/path")
		}
	}
	segs := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	for i, s := range segs {
		if s == "" || s == "." || s == ".." {
			return errors.New("has an empty, . or .. element")
		}
		if _, err := path.Match(s, ""); err != nil {
			return fmt.Errorf("element %q is not a valid pattern", s)
		}
		if i == 0 && strings.ContainsAny(s, `*?[\`) {
			// "/*/…" would let a message name any top-level directory.
			return errors.New("must start with a plain directory name")
		}
	}
	return nil
}

// splitPath splits a clean absolute or "~/" path into elements ("~" being
// the first element of the latter).
func splitPath(p string) []string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return append([]string{"~"}, strings.Split(rest, "/")...)
	}
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

// matchRoot finds the root p lies strictly inside: it returns that root as
// a concrete directory (the pattern's elements replaced by p's) and p
// relative to it. p and the patterns are clean, "/"-separated, absolute
// or "~/" paths, compared element by element (case-sensitively).
func matchRoot(patterns []string, p string) (root, rel string, ok bool) {
	ps := splitPath(p)
	for _, pat := range patterns {
		rs := splitPath(strings.TrimSuffix(pat, "/"))
		if len(ps) <= len(rs) {
			continue
		}
		match := true
		for i, r := range rs {
			if m, err := path.Match(r, ps[i]); err != nil || !m {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		root = strings.Join(ps[:len(rs)], "/")
		if ps[0] == "~" {
			root = "~/" + strings.Join(ps[1:len(rs)], "/")
		} else {
			root = "/" + root
		}
		return root, strings.Join(ps[len(rs):], "/"), true
	}
	return "", "", false
}

// expandHome replaces a leading "~" of p and of each root with home.
func expandHome(p, home string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return p
}

// cleanSource checks a path from a message (which anyone who can message
// the owner influences) and returns it clean: absolute or "~/", no control
// characters, no "." or ".." elements (nothing in Messages' own paths has
// them; a path that needs them is not one imsg resolved).
func cleanSource(p string) (string, error) {
	if len(p) > maxPathBytes {
		return "", errors.New("the path is too long")
	}
	if strings.ContainsFunc(p, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }) {
		return "", errors.New("control characters in the path")
	}
	if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~/") {
		return "", errors.New("not an absolute path")
	}
	for _, s := range splitPath(p) {
		if s == "." || s == ".." {
			return "", errors.New(". or .. in the path")
		}
	}
	return path.Clean(p), nil
}

// media turns a message's attachments into engine.Media: each file copied
// into MediaDir (from this Mac, or over ssh from remoteHost), never handed
// on by its path on the Mac: whatever the gateway does with a message's
// media afterwards (delete it when the message is dropped, show it to the
// model) then happens to our copy, never to the owner's own file. It
// returns notes for the text about what was left out.
func (a *Adapter) media(ctx context.Context, m *imsgMessage) ([]engine.Media, []string) {
	var out []engine.Media
	var notes []string
	max := a.cfg.maxMediaBytes()
	for i, at := range m.Attachments {
		src := at.source()
		if at.Missing || src == "" {
			a.log.Info("imessage: attachment not on the Mac (missing)", "guid", m.GUID)
			notes = append(notes, "[attachment not available: it is not on the Mac]")
			continue
		}
		if at.size() > max {
			a.log.Info("imessage: attachment over mediaMaxMb skipped", "guid", m.GUID, "bytes", at.size())
			notes = append(notes, fmt.Sprintf("[attachment not included: over mediaMaxMb %d]", max>>20))
			continue
		}
		if a.deps.MediaDir == "" {
			a.log.Warn("imessage: attachment not included: no media directory configured", "guid", m.GUID)
			notes = append(notes, "[attachment not included: no media directory]")
			continue
		}
		var dest string
		var err error
		if a.cfg.RemoteHost != "" {
			dest, err = a.fetchRemote(ctx, m.GUID, i, src, max)
		} else {
			dest, err = a.copyLocal(m.GUID, i, src, max)
		}
		switch {
		case err == nil:
			out = append(out, engine.Media{Path: dest, MimeType: mimeOf(at.MimeType, dest)})
		case errors.Is(err, errAttachmentRefused):
			a.log.Warn("imessage: attachment refused", "guid", m.GUID, "path", sanitize(src, 300), "err", err)
			notes = append(notes, "[attachment not included: refused]")
		case errors.Is(err, errAttachmentTooLarge):
			a.log.Info("imessage: attachment over mediaMaxMb skipped", "guid", m.GUID, "err", err)
			notes = append(notes, fmt.Sprintf("[attachment not included: over mediaMaxMb %d]", max>>20))
		case errors.Is(err, errAttachmentMissing):
			a.log.Info("imessage: attachment not on the Mac", "guid", m.GUID, "path", sanitize(src, 300))
			notes = append(notes, "[attachment not available: it is not on the Mac]")
		default:
			a.log.Warn("imessage: copying an attachment failed", "guid", m.GUID, "path", sanitize(src, 300), "err", err)
			notes = append(notes, "[attachment not included: it could not be copied]")
		}
	}
	return out, notes
}

// localRoots are the attachment roots on this machine, "~" expanded.
func (a *Adapter) localRoots(home string) []string {
	var out []string
	for _, r := range append(append([]string{}, DefaultAttachmentRoots...), a.cfg.AttachmentRoots...) {
		if strings.HasPrefix(r, "~/") && home == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(r, "~/"); ok {
			// The home is a literal directory: its * ? [ \ are no pattern.
			r = escapeGlob(filepath.ToSlash(home)) + "/" + rest
		}
		out = append(out, path.Clean(r))
	}
	return out
}

// escapeGlob quotes path.Match's special characters in s.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mediaName is the name of an attachment's copy: derived from the message
// guid, the attachment's index and its source path, so a message delivered
// again after a restart finds its copy instead of making another; never
// from the sender's file name. The extension is the source's, when plain.
func mediaName(guid string, i int, src string) string {
	sum := sha256.Sum256([]byte(guid + "\x00" + strconv.Itoa(i) + "\x00" + src))
	return "imessage-" + hex.EncodeToString(sum[:12]) + safeExt(src)
}

// existingCopy returns dest if it is a regular file already (a copy made
// before a restart).
func existingCopy(dest string) bool {
	st, err := os.Lstat(dest)
	return err == nil && st.Mode().IsRegular()
}

// copyLocal copies an attachment on this Mac into MediaDir. The source
// must lie inside an attachment root after every symlink is resolved: the
// root directory is opened as an os.Root, which refuses a path that
// leaves it (through "..", an absolute symlink or one that climbs out),
// and the file itself is opened with O_NOFOLLOW (a symlink in its place is
// refused, also one swapped in after a check) and O_NONBLOCK (a FIFO
// cannot hang the adapter); only a regular file within max bytes is
// copied, and the copy is capped at max whatever the file grows to.
func (a *Adapter) copyLocal(guid string, i int, src string, max int64) (string, error) {
	clean, err := cleanSource(src)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errAttachmentRefused, err)
	}
	home, _ := os.UserHomeDir()
	if strings.HasPrefix(clean, "~/") {
		if home == "" {
			return "", fmt.Errorf("%w: ~ in the path, but no home directory is known", errAttachmentRefused)
		}
		clean = expandHome(clean, home)
	}
	root, rel, ok := matchRoot(a.localRoots(home), clean)
	if !ok {
		return "", fmt.Errorf("%w: outside the Messages attachments directory (attachmentRoots)", errAttachmentRefused)
	}
	r, err := os.OpenRoot(root)
	if errors.Is(err, fs.ErrNotExist) {
		return "", errAttachmentMissing
	}
	if err != nil {
		return "", fmt.Errorf("open the attachments directory: %w", err)
	}
	defer r.Close()
	f, err := r.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", errAttachmentMissing
	case err != nil:
		// ELOOP (a symlink), "path escapes from parent", EACCES …
		return "", fmt.Errorf("%w: %w", errAttachmentRefused, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("stat: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%w: not a regular file (%s)", errAttachmentRefused, fileKind(st.Mode()))
	}
	if st.Size() > max {
		return "", fmt.Errorf("%w: %d bytes", errAttachmentTooLarge, st.Size())
	}
	if err := os.MkdirAll(a.deps.MediaDir, 0o700); err != nil {
		return "", fmt.Errorf("media dir: %w", err)
	}
	dest := filepath.Join(a.deps.MediaDir, mediaName(guid, i, clean))
	if existingCopy(dest) {
		return dest, nil
	}
	return dest, writeCopy(a.deps.MediaDir, dest, max, func(w io.Writer) error {
		_, err := io.Copy(w, f)
		return err
	})
}

// fileKind names a mode's file type for a log line.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// writeCopy writes what fill writes (at most max bytes) to a temporary
// file in dir and renames it to dest; on any failure nothing is left.
func writeCopy(dir, dest string, max int64, fill func(io.Writer) error) error {
	tmp, err := os.CreateTemp(dir, ".imessage-copy-*") // 0600, O_EXCL
	if err != nil {
		return fmt.Errorf("media temp file: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename this removes nothing
	lw := &limitWriter{w: tmp, n: max}
	fillErr := fill(lw)
	closeErr := tmp.Close()
	switch {
	case lw.over:
		return fmt.Errorf("%w: the file has more than %d bytes", errAttachmentTooLarge, max)
	case fillErr != nil:
		return fillErr
	case closeErr != nil:
		return fmt.Errorf("write attachment: %w", closeErr)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return fmt.Errorf("store attachment: %w", err)
	}
	return nil
}

// remoteCheck runs on the remote Mac (sh -c, $1 the root, $2 the file):
// both are resolved there with cd -P (every directory symlink followed),
// the file's directory must be the root or inside it, and the file must be
// a regular file and not a symlink; only then is it written out. Exit
// status 3 means refused.
const remoteCheck = `r=$(cd -P -- "$1" 2>/dev/null && pwd) || exit 4
d=$(cd -P -- "$(dirname -- "$2")" 2>/dev/null && pwd) || exit 4
f="$d/$(basename -- "$2")"
case "$d/" in "$r"/*) ;; *) echo "outside the attachments directory" >&2; exit 3;; esac
if [ -L "$f" ] || [ ! -f "$f" ]; then echo "not a regular file" >&2; exit 3; fi
exec cat -- "$f"`

// remoteRoots are the attachment roots on remoteHost ("~" is the remote
// home: it is expanded there, by the remote shell).
func (a *Adapter) remoteRoots() []string {
	var out []string
	for _, r := range append(append([]string{}, DefaultAttachmentRoots...), a.cfg.RemoteAttachmentRoots...) {
		out = append(out, path.Clean(r))
	}
	return out
}

// fetchRemote copies an attachment from remoteHost into MediaDir, at most
// max bytes, after remoteCheck confirmed there that it is a regular file
// inside a remote attachment root.
func (a *Adapter) fetchRemote(ctx context.Context, guid string, i int, src string, max int64) (string, error) {
	clean, err := cleanSource(src)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errAttachmentRefused, err)
	}
	root, _, ok := matchRoot(a.remoteRoots(), clean)
	if !ok {
		return "", fmt.Errorf("%w: outside the Messages attachments directory (remoteAttachmentRoots)", errAttachmentRefused)
	}
	if err := os.MkdirAll(a.deps.MediaDir, 0o700); err != nil {
		return "", fmt.Errorf("media dir: %w", err)
	}
	dest := filepath.Join(a.deps.MediaDir, mediaName(guid, i, clean))
	if existingCopy(dest) {
		return dest, nil // fetched before a restart
	}
	fctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	err = writeCopy(a.deps.MediaDir, dest, max, func(w io.Writer) error {
		name, args := commandLine(a.cfg, "sh", "-c", remoteCheck, "sh", root, clean)
		cmd := exec.CommandContext(fctx, name, args...)
		cmd.Stdout = w
		var stderr strings.Builder
		cmd.Stderr = &limitWriter{w: &stderr, n: 1024}
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee) && ee.ExitCode() == 3:
			return fmt.Errorf("%w: on the Mac: %s", errAttachmentRefused, sanitize(stderr.String(), 200))
		case errors.As(err, &ee) && ee.ExitCode() == 4:
			return errAttachmentMissing
		case err != nil:
			return fmt.Errorf("ssh: %w: %s", err, sanitize(stderr.String(), 200))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return dest, nil
}

// mimeOf is imsg's mime_type when it is a well-formed type, else the
// type of the copy's extension, else application/octet-stream.
func mimeOf(declared, dest string) string {
	if mt, _, err := mime.ParseMediaType(declared); err == nil && strings.Count(mt, "/") == 1 && len(mt) <= 100 {
		return mt
	}
	if mt, _, err := mime.ParseMediaType(mime.TypeByExtension(filepath.Ext(dest))); err == nil && mt != "" {
		return mt
	}
	return "application/octet-stream"
}

// safeExt is path's extension if it is short and plain (".jpeg", ".heic").
func safeExt(path string) string {
	ext := strings.ToLower(filepath.Ext(path))
	if len(ext) < 2 || len(ext) > 10 || strings.Trim(ext[1:], "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
		return ""
	}
	return ext
}

// limitWriter writes at most n bytes to w and then fails.
type limitWriter struct {
	w    io.Writer
	n    int64
	over bool
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.n {
		l.over = true
		return 0, errors.New("size limit exceeded")
	}
	l.n -= int64(len(p))
	return l.w.Write(p)
}
