package safebin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var defaultBins = strings.Fields("ls cat head tail wc echo pwd date whoami uname grep sort uniq cut tr true false")

// workspace makes a workspace with a file, a subdirectory, a symlink that
// points out and one that points in, and returns its path.
func workspace(t testing.TB) string {
	t.Helper()
	ws := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o600))
	must(os.MkdirAll(filepath.Join(ws, "sub"), 0o700))
	must(os.WriteFile(filepath.Join(ws, "sub", "b.txt"), []byte("b\n"), 0o600))
	must(os.Symlink("/etc", filepath.Join(ws, "out")))
	must(os.Symlink("/etc/passwd", filepath.Join(ws, "pw")))
	must(os.Symlink("a.txt", filepath.Join(ws, "in")))
	must(os.Symlink("/nonexistent-openclaw-test/x", filepath.Join(ws, "dangling")))
	return ws
}

func TestCheck(t *testing.T) {
	ws := workspace(t)
	safe := []string{
		"ls", "ls -la", "ls -la sub", "ls -l --sort=size sub", "ls --so=size", "ls --color=never -R .",
		"ls " + filepath.Join(ws, "sub"), "ls in", "ls -- -x", "ls 'a.txt' \"sub\"", `ls a\.txt`,
		"ls new-file-not-there", "ls sub/../a.txt", "ls -w 80", "ls -w80", "ls --width 80", "ls -I '*.o'",
		"cat a.txt", "cat -n a.txt sub/b.txt", "cat -", "cat in",
		"head -n 5 a.txt", "head -n5 a.txt", "head -5 a.txt", "head --lines=5 a.txt", "head --li 5 a.txt", "head -c 10 a.txt",
		"tail -n 5 a.txt", "tail -n +2 a.txt", "tail -5 a.txt", "tail --lines=3 a.txt", "tail -c 10 a.txt",
		"wc -l a.txt", "wc --lines a.txt", "wc -lw a.txt sub/b.txt",
		"echo hello world", "echo -n 'a b'", `echo "a\"b"`, "echo '$HOME' '`id`' 'a;b|c>d'",
		"pwd", "pwd -P", "date", "date +%Y-%m-%d", "date -u", "date -d tomorrow +%s", "date --date='2024-01-01' -I",
		"date -Iseconds", "date --iso-8601=minutes", "date --rfc-3339=ns", "date -R",
		"whoami", "uname", "uname -a", "uname -sr", "true", "false", "true anything at all",
		"grep foo a.txt", "grep -n foo a.txt sub/b.txt", "grep -r foo", "grep -r foo sub", "grep -rn foo .",
		"grep -e foo -e bar a.txt", "grep -f a.txt sub/b.txt", "grep --file=a.txt sub/b.txt", "grep -fa.txt sub/b.txt",
		"grep -i -C3 foo a.txt", "grep -5 foo a.txt", "grep --color=never foo a.txt", "grep --col foo a.txt", "grep -- -foo a.txt",
		"grep --include='*.go' -r foo", "grep --exclude-from=a.txt -r foo", "grep -E 'a|b' a.txt", "grep foo",
		"sort a.txt", "sort -rn a.txt", "sort -k2,2 -t, a.txt", "sort --key=2 a.txt", "sort -u a.txt sub/b.txt",
		"sort --random-source=a.txt -R a.txt", "sort --check a.txt", "sort --check=quiet a.txt", "sort -c a.txt",
		"sort --parallel=2 -S 10M a.txt",
		"uniq a.txt", "uniq -c a.txt", "uniq --group=append a.txt", "uniq",
		"cut -d, -f1 a.txt", "cut -f 1,2 a.txt", "cut --output-delimiter=: -f1 a.txt", "cut -c1-3",
		"tr a-z A-Z", "tr -d x", "tr -cd 'a-z'", "tr -s ' '", "tr '[:lower:]' '[:upper:]'",
		"ls --help", "sort --version",
	}
	for _, c := range safe {
		if r := Check(c, defaultBins, ws, ws); !r.Safe {
			t.Errorf("Check(%q) not safe: %s", c, r.Reason)
		}
	}
	// From sub: relative paths resolve from the command's directory.
	for _, c := range []string{"cat b.txt", "cat ../a.txt", "ls ..", "grep -r x .."} {
		if r := Check(c, defaultBins, ws, filepath.Join(ws, "sub")); !r.Safe {
			t.Errorf("Check(%q) in sub not safe: %s", c, r.Reason)
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	ws := workspace(t)
	for _, tt := range []struct{ cmd, why string }{
		// Shell syntax: only one simple command of literal words.
		{"ls $HOME", "expansion"}, {"ls ${HOME}", "expansion"}, {`ls "$HOME"`, "expansion"},
		{"ls ~", "tilde"}, {"ls ~/x", "tilde"}, {"ls --hide=~", "tilde"}, {"cat a*", "glob"},
		{"cat a?.txt", "glob"}, {"cat [a].txt", "glob"}, {"cat {a,b}.txt", "brace"},
		{"FOO=1 ls", "sets variables"}, {"ls; id", "list"}, {"ls ;", "separator"},
		{"ls | sh", "pipeline"}, {"ls && id", "pipeline"}, {"ls || id", "pipeline"}, {"ls > f", "redirection"},
		{"ls < a.txt", "redirection"}, {"ls 2>&1", "redirection"}, {"cat <<EOF\nx\nEOF", "control"},
		{"$(id)", "substitution"}, {"`id`", "expansion"}, {"echo $(id)", "substitution"}, {"ls \"$(id)\"", "expansion"},
		{"ls $((1+1))", "arithmetic"}, {"ls <(id)", "process"}, {"ls &", "background"}, {"(ls)", "subshell"},
		{"{ ls; }", "compound"}, {"! ls", "negated"}, {"ls\nid", "control"}, {"ls\r", "control"},
		{"ls\x00", "control"}, {"ls \x1b[2J", "control"}, {"ls \u202e", "control"}, {"ls # hidden", "comment"},
		{"echo $'\\x41'", "$'"}, {"ls \xff", "UTF-8"}, {"", "empty"}, {"if true; then ls; fi", "compound"},
		{"ls `id`", "expansion"}, {"time ls", "compound"}, {"ls 'unterminated", "parse"},
		// argv[0].
		{"/bin/ls", "path"}, {"./ls", "path"}, {"id", "not in"}, {"sh -c ls", "not in"}, {"env", "not in"},
		{`find . -exec sh \;`, "not in"},
		// Paths outside the workspace.
		{"cat /etc/passwd", "outside"}, {"cat ../x", "outside"}, {"cat sub/../../x", "outside"},
		{"head -- /etc/passwd", "outside"}, {"ls /", "outside"}, {"cat out/passwd", "outside"},
		{"cat pw", "outside"}, {"ls out", "outside"}, {"ls out/..", "outside"}, {"cat dangling", "symlink"},
		{"cat nothere/../../etc/passwd", ".."}, {"cat a.txt/../../x", ".."}, {"ls " + filepath.Dir(ws), "outside"},
		{"cat '/etc/passwd'", "outside"}, {`cat \/etc/passwd`, "outside"}, {`cat "/etc"/passwd`, "outside"},
		{"wc -l /etc/shadow", "outside"}, {"tail /var/log/syslog", "outside"}, {"uniq /etc/passwd", "outside"},
		{"cut -f1 /etc/passwd", "outside"}, {"sort /etc/shadow", "outside"}, {"sort -m a.txt /etc/passwd", "outside"},
		{"cat a.txt -- /etc/passwd", "outside"}, {"cat a.txt /etc/passwd", "outside"},
		// ls.
		{"ls -L out", "symlinks"}, {"ls --dereference", "symlinks"}, {"ls --der", "ambiguous"},
		{"ls -y", "unknown"}, {"ls --nope", "unknown"}, {"ls --all=x", "no value"}, {"ls -w", "needs a value"},
		// sort: writes, runs programs, temp dirs, file lists.
		{"sort --compress-program=sh a.txt", "runs a program"}, {"sort --co=sh a.txt", "runs a program"},
		{"sort --compress=sh a.txt", "runs a program"}, {"sort --comp sh a.txt", "runs a program"},
		{"sort --c=sh a.txt", "ambiguous"}, {"sort -o/etc/x a.txt", "writes"}, {"sort -o /etc/x a.txt", "writes"},
		{"sort -o x a.txt", "writes"}, {"sort --output=../x a.txt", "writes"}, {"sort --out=x a.txt", "writes"},
		{"sort --o x", "writes"}, {"sort -uo/etc/x a.txt", "writes"}, {"sort -T /tmp a.txt", "temporary"},
		{"sort -T/tmp a.txt", "temporary"}, {"sort --temporary-directory=/tmp a.txt", "temporary"},
		{"sort --te=/tmp", "temporary"}, {"sort --files0-from=/etc/passwd", "list of file names"},
		{"sort --files0=a.txt", "list of file names"}, {"sort --fi=a.txt", "ambiguous"},
		{"sort --random-source=/dev/urandom a.txt", "outside"}, {"sort --random-sou=/etc/shadow", "outside"},
		{"sort -y a.txt", "unknown"}, {"sort +1 /etc/passwd", "outside"},
		// date: reads files, sets the clock.
		{"date -f /etc/shadow", "reads a file"}, {"date -f a.txt", "reads a file"}, {"date --file=a.txt", "reads a file"},
		{"date --fi a.txt", "reads a file"}, {"date -r /etc/passwd", "reads a file"}, {"date --reference=/etc/passwd", "reads a file"},
		{"date --ref=a.txt", "reads a file"}, {"date -s now", "clock"}, {"date --set=now", "clock"}, {"date --se now", "clock"},
		{"date 010100002030", "only +FORMAT"}, {"date +%s +%s", "at most one"}, {"date --r", "ambiguous"},
		{"date -d 'TZ=\"/etc/shadow\" now'", "TZ="}, {"date -uf/etc/shadow", "reads a file"},
		// grep.
		{"grep -f /etc/passwd x", "outside"}, {"grep -f/etc/passwd x", "outside"}, {"grep --file=/etc/passwd x", "outside"},
		{"grep --file /etc/passwd x", "outside"}, {"grep -r x /", "outside"}, {"grep -r x out", "outside"},
		{"grep -R x .", "symlinks"}, {"grep --dereference-recursive x", "symlinks"}, {"grep --exclude-from=/etc/passwd -r x", "outside"},
		{"grep x /etc/passwd", "outside"}, {"grep -e x /etc/passwd", "outside"}, {"grep x -e y /etc/passwd", "outside"},
		{"grep -e x a.txt pw", "outside"}, {"grep", "pattern"}, {"grep --co x a.txt", "ambiguous"},
		{"grep -X perl x a.txt", "unknown"}, {"grep -fa.txt /etc/passwd", "outside"},
		// wc, tail, head.
		{"wc --files0-from=/etc/passwd", "list of file names"}, {"wc --files0-from=a.txt", "list of file names"},
		{"wc --files0 a.txt", "list of file names"}, {"wc --f=a.txt", "list of file names"},
		{"tail -f a.txt", "never ends"}, {"tail -F a.txt", "never ends"}, {"tail --follow a.txt", "never ends"},
		{"tail --follow=name a.txt", "never ends"}, {"tail --fo a.txt", "never ends"},
		{"tail -5f a.txt", "obsolete"}, {"tail +5f a.txt", "obsolete"}, {"tail +5", "obsolete"}, {"tail -qf a.txt", "never ends"},
		{"tail --pid=1 a.txt", "follow"}, {"tail -n 5 -f a.txt", "never ends"}, {"tail a.txt -f", "never ends"},
		{"head -5c /etc/passwd", "obsolete"}, {"head -5c a.txt", "obsolete"}, {"head -c", "needs a value"},
		// uniq writes its second operand; cut, tr, echo…
		{"uniq a.txt out.txt", "writes"}, {"uniq a.txt /etc/x", "writes"}, {"uniq -z --nope", "unknown"},
		{"cut -d, -f1 -- /etc/passwd", "outside"}, {"tr --nope a b", "unknown"}, {"pwd /", "no operand"},
		{"whoami root", "no operand"}, {"uname -x", "unknown"}, {"cat -x a.txt", "unknown"},
		{"cat --=x", "empty long option"},
	} {
		r := Check(tt.cmd, defaultBins, ws, ws)
		if r.Safe {
			t.Errorf("Check(%q) is safe, want refused (%s)", tt.cmd, tt.why)
			continue
		}
		if !strings.Contains(r.Reason, tt.why) {
			t.Errorf("Check(%q) reason %q, want it to mention %q", tt.cmd, r.Reason, tt.why)
		}
	}
}
