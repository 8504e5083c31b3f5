package memeval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Question categories, in the mapping most follow-up work on LoCoMo uses.
const (
	MultiHop    = 1
	Temporal    = 2
	OpenDomain  = 3
	SingleHop   = 4
	Adversarial = 5 // no answer in the conversation; not scored
)

// Categories are the scored categories, in table order.
var Categories = []int{MultiHop, Temporal, OpenDomain, SingleHop}

// CategoryName is the short name of a category ("multi-hop", ...).
func CategoryName(c int) string {
	switch c {
	case MultiHop:
		return "multi-hop"
	case Temporal:
		return "temporal"
	case OpenDomain:
		return "open-domain"
	case SingleHop:
		return "single-hop"
	case Adversarial:
		return "adversarial"
	}
	return "category " + strconv.Itoa(c)
}

// Sample is one conversation and its questions.
type Sample struct {
	ID        string
	Speakers  [2]string // speaker_a, speaker_b
	Sessions  []Session // by N, only sessions that have turns
	Questions []Question
}

// Session is one sitting of the conversation.
type Session struct {
	N        int
	DateTime string    // as in the data, e.g. "1:56 pm on 8 May, 2023"
	Date     time.Time // DateTime parsed, in UTC
	Turns    []Turn
}

// Turn is one message. Text is as in the data (it may hold newlines);
// Caption is the blip_caption of a shared photo, or "".
type Turn struct {
	DiaID, Speaker, Text, Caption string
}

// Question is one qa item. Evidence holds the normalised dia ids (split,
// repaired, deduplicated; see the package doc); RawEvidence the entries as
// in the data. Answer is the answer as text (a number becomes its decimal
// text), or the adversarial_answer when there is no answer.
type Question struct {
	Text, Answer string
	Evidence     []string
	RawEvidence  []string
	Category     int
}

// Load reads a locomo-style JSON file.
func Load(path string) ([]Sample, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

type rawSample struct {
	SampleID     string                     `json:"sample_id"`
	Conversation map[string]json.RawMessage `json:"conversation"`
	QA           []rawQA                    `json:"qa"`
}

type rawQA struct {
	Question    string          `json:"question"`
	Answer      json.RawMessage `json:"answer"`
	Adversarial json.RawMessage `json:"adversarial_answer"`
	Evidence    []string        `json:"evidence"`
	Category    int             `json:"category"`
}

type rawTurn struct {
	Speaker string  `json:"speaker"`
	DiaID   string  `json:"dia_id"`
	Text    string  `json:"text"`
	Caption *string `json:"blip_caption"`
}

var sessionKey = regexp.MustCompile(`^session_([0-9]+)$`)

// Decode parses locomo-style JSON (a list of samples).
func Decode(data []byte) ([]Sample, error) {
	var raw []rawSample
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	out := make([]Sample, 0, len(raw))
	for i, r := range raw {
		s, err := decodeSample(r)
		if err != nil {
			id := r.SampleID
			if id == "" {
				id = "#" + strconv.Itoa(i)
			}
			return nil, fmt.Errorf("sample %s: %w", id, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func decodeSample(r rawSample) (Sample, error) {
	s := Sample{ID: r.SampleID}
	str := func(key string) (string, error) {
		v, ok := r.Conversation[key]
		if !ok || string(v) == "null" {
			return "", nil
		}
		var x string
		if err := json.Unmarshal(v, &x); err != nil {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		return x, nil
	}
	var err error
	if s.Speakers[0], err = str("speaker_a"); err != nil {
		return s, err
	}
	if s.Speakers[1], err = str("speaker_b"); err != nil {
		return s, err
	}
	for key, v := range r.Conversation {
		m := sessionKey.FindStringSubmatch(key)
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			return s, fmt.Errorf("%s: %w", key, err)
		}
		var turns []rawTurn
		if err := json.Unmarshal(v, &turns); err != nil {
			return s, fmt.Errorf("%s: %w", key, err)
		}
		if len(turns) == 0 {
			continue
		}
		ses := Session{N: n}
		if ses.DateTime, err = str(key + "_date_time"); err != nil {
			return s, err
		}
		if ses.Date, err = ParseDateTime(ses.DateTime); err != nil {
			return s, fmt.Errorf("%s_date_time: %w", key, err)
		}
		for _, t := range turns {
			if t.DiaID == "" {
				return s, fmt.Errorf("%s: turn without dia_id", key)
			}
			tt := Turn{DiaID: normID(t.DiaID), Speaker: t.Speaker, Text: t.Text}
			if t.Caption != nil {
				tt.Caption = *t.Caption
			}
			ses.Turns = append(ses.Turns, tt)
		}
		s.Sessions = append(s.Sessions, ses)
	}
	sort.Slice(s.Sessions, func(i, j int) bool { return s.Sessions[i].N < s.Sessions[j].N })
	for _, q := range r.QA {
		s.Questions = append(s.Questions, Question{
			Text:        q.Question,
			Answer:      answerText(q.Answer, q.Adversarial),
			Evidence:    NormaliseEvidence(q.Evidence),
			RawEvidence: q.Evidence,
			Category:    q.Category,
		})
	}
	return s, nil
}

// answerText renders an answer that may be a string, a number or absent.
func answerText(vals ...json.RawMessage) string {
	for _, v := range vals {
		v = bytes.TrimSpace(v)
		if len(v) == 0 || string(v) == "null" {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
		return string(v) // a number, bool or anything else: its JSON text
	}
	return ""
}

var dateLayouts = []string{
	"3:04 pm on 2 January, 2006",
	"3:04 pm on 2 Jan, 2006",
	"3:04 pm on 2 January 2006",
	"3:04 PM on 2 January, 2006",
}

// ParseDateTime parses a session date as written in the data, e.g.
// "1:56 pm on 8 May, 2023", in UTC.
func ParseDateTime(s string) (time.Time, error) {
	s = strings.Join(strings.Fields(s), " ")
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("unrecognised date %q", s)
}

var evidenceID = regexp.MustCompile(`^[Dd]:?([0-9]+):([0-9]+)$`)

// NormaliseEvidence splits entries that hold several ids ("D8:6; D9:17"),
// repairs "D:11:26" to "D11:26", drops entries that are no id at all ("D")
// and duplicates, keeping the order.
func NormaliseEvidence(raw []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range raw {
		for _, p := range strings.FieldsFunc(e, func(r rune) bool {
			return r == ';' || r == ',' || r == ' ' || r == '\t' || r == '\n'
		}) {
			id, ok := parseID(p)
			if !ok || seen[id] {
				continue
			}
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func parseID(p string) (string, bool) {
	m := evidenceID.FindStringSubmatch(strings.TrimSpace(p))
	if m == nil {
		return "", false
	}
	a, err1 := strconv.Atoi(m[1])
	b, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil {
		return "", false
	}
	return "D" + strconv.Itoa(a) + ":" + strconv.Itoa(b), true
}

// normID canonicalises a turn's dia_id the way evidence is, so that the two
// compare equal; an id of another shape is kept as it is.
func normID(s string) string {
	if id, ok := parseID(s); ok {
		return id
	}
	return strings.TrimSpace(s)
}
