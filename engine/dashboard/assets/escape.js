// Escapes for showing text a model or a stranger chose: ports of the Go
// functions api.EscapeControl, api.EscapeArgv and api.EscapeID, so the
// dashboard shows exactly what the CLI shows. Every character that could
// hide or rewrite text becomes a visible escape; printable text, non-Latin
// scripts included, stays as it is.
//
// A JS string is UTF-16, not bytes: the gateway's JSON already turned
// invalid UTF-8 into U+FFFD, so the byte escape (\xff) never arises here
// except for ASCII controls; a lone surrogate (which Go could not hold)
// shows as \ufffd, what Go shows for an invalid rune.
//
// The categories come from the browser's Unicode tables, Go's from its
// own: a character a newer Unicode assigns (a letter or symbol Go still
// calls unassigned, so escapes) shows as itself here. Invisible kinds
// (controls, format characters, spaces, the list in visible) are escaped
// whatever the version.

const hex = (c, n) => c.toString(16).padStart(n, '0');

const named = { 0x07: '\\a', 0x08: '\\b', 0x09: '\\t', 0x0a: '\\n', 0x0b: '\\v', 0x0c: '\\f', 0x0d: '\\r' };

// Go's unicode.IsPrint: categories L, M, N, P, S, and the ASCII space.
const graphic = /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u;
// Default_Ignorable_Code_Point covers Go's Other_Default_Ignorable_Code_Point
// and Variation_Selector (the rest of it, format characters, is not
// printable anyway); JS has no property for the former alone.
const ignorable = /^[\p{Default_Ignorable_Code_Point}\p{Variation_Selector}]$/u;

const isSurrogate = c => c >= 0xd800 && c <= 0xdfff;

// visible reports whether the character ch (code point c) shows as itself;
// the explicit list is the one api's visible never lets pass: bidi
// overrides and isolates, marks, zero-width characters, BOM, line and
// paragraph separators, the blank Braille pattern.
function visible(ch, c) {
  if ((c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c === 0x200e || c === 0x200f || c === 0x061c ||
      (c >= 0x200b && c <= 0x200d) || c === 0x2060 || c === 0xfeff || c === 0x2028 || c === 0x2029 || c === 0x2800) return false;
  if (c >= 0x80 && ignorable.test(ch)) return false;
  return c === 0x20 || graphic.test(ch);
}

// escapeControl is api.EscapeControl: C0 and C1 controls, DEL, bidi
// overrides and isolates, zero-width and other format characters, line and
// paragraph separators, non-ASCII spaces become Go-style escapes (\r,
// \x1b, \u202e, \U000e0001); a backslash is doubled so the result is
// unambiguous.
export function escapeControl(s) {
  s = String(s ?? '');
  if (/^[\x20-\x5b\x5d-\x7e]*$/.test(s)) return s; // printable ASCII, no backslash
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0);
    if (ch === '\\') out += '\\\\';
    else if (named[c]) out += named[c];
    else if (c < 0x80 && (c < 0x20 || c === 0x7f)) out += '\\x' + hex(c, 2);
    else if (isSurrogate(c)) out += '\\ufffd';
    else if (visible(ch, c)) out += ch;
    else if (c <= 0xffff) out += '\\u' + hex(c, 4);
    else out += '\\U' + hex(c, 8);
  }
  return out;
}

// escapeArgv is api.EscapeArgv: argv on one line, each argument escaped
// and single-quoted when it is empty or holds a space or a quote, so the
// argument boundaries stay visible.
export function escapeArgv(argv) {
  return (argv || []).map(a => {
    const e = escapeControl(a);
    return e === '' || /[ '"]/.test(e) ? "'" + e.replaceAll("'", "'\\''") + "'" : e;
  }).join(' ');
}

// escapeID is api.EscapeID: a sender or chat id as it is when it is
// printable ASCII without spaces, quotes or backslashes, else Go-quoted
// (strconv.QuoteToASCII) with every non-ASCII character escaped, so a
// look-alike of the owner's id (a Kelvin sign for a K, Cyrillic letters)
// never reads as the owner.
export function escapeID(id) {
  id = String(id ?? '');
  if (id === '') return '""';
  if (/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(id)) return id;
  let out = '"';
  for (const ch of id) {
    const c = ch.codePointAt(0);
    if (ch === '"' || ch === '\\') out += '\\' + ch;
    else if (c >= 0x20 && c < 0x7f) out += ch;
    else if (named[c]) out += named[c];
    else if (c < 0x80) out += '\\x' + hex(c, 2);
    else if (isSurrogate(c)) out += '\\ufffd';
    else if (c < 0x10000) out += '\\u' + hex(c, 4);
    else out += '\\U' + hex(c, 8);
  }
  return out + '"';
}
