package textstats

import (
	"compress/gzip"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
)

//go:embed texts/opticks.txt.gz
var texts embed.FS

// documents maps the opaque document IDs to their texts, embedded
// gzip-compressed (a third of the size in every binary that links the
// agent) and decompressed once, on first use.
var documents = map[string]func() (string, error){"opticks": sync.OnceValues(func() (string, error) {
	return gunzip("texts/opticks.txt.gz")
})}

// gunzip returns the decompressed embedded file.
func gunzip(name string) (string, error) {
	f, err := texts.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(zr)
	return string(b), err
}

// MaxTextChars is the longest inline text, in characters (Unicode code
// points): the agent.json schema's maxLength counts the same way, so a
// text the schema takes is never refused here.
const MaxTextChars = 200_000

// Input is the agent's variables.
type Input struct {
	Document string `json:"document,omitempty"`
	Text     string `json:"text,omitempty"`
	Top      int    `json:"top,omitempty"`
}

// Term is one entry of the top terms.
type Term struct {
	Word  string `json:"word"`
	Count int    `json:"count"`
}

// Stats is the agent's result.
type Stats struct {
	Document           string  `json:"document,omitempty"`
	Bytes              int     `json:"bytes"`
	Lines              int     `json:"lines"`
	Paragraphs         int     `json:"paragraphs"`
	Words              int     `json:"words"`
	UniqueWords        int     `json:"unique_words"`
	Sentences          int     `json:"sentences"`
	MeanSentenceWords  float64 `json:"mean_sentence_words"`
	MeanWordLength     float64 `json:"mean_word_length"`
	LongestWord        string  `json:"longest_word"`
	TopTerms           []Term  `json:"top_terms"`
	LexicalDiversity   float64 `json:"lexical_diversity"`
	LongestSentenceLen int     `json:"longest_sentence_words"`
}

// Register adds the textstats handler to r as "textstats".
func Register(r *functions.Registry) { r.Register("textstats", handle) }

//go:embed agent.json
var manifestJSON []byte

// Manifest is the agent's manifest: agent.json, embedded, so `sortie run
// examples/textstats` and the built-in agent declare the same input
// schema.
var Manifest = func() sortie.Manifest {
	var m sortie.Manifest
	if err := json.Unmarshal(manifestJSON, &m); err != nil {
		panic("textstats: agent.json: " + err.Error())
	}
	return m
}()

func handle(ctx context.Context, call *functions.Call) (any, error) {
	var in Input
	if err := call.Variables(&in); err != nil {
		return nil, functions.Permanent(err)
	}
	name, text, err := load(in)
	if err != nil {
		return nil, functions.Permanent(err)
	}
	top := in.Top
	if top == 0 {
		top = 10
	}
	if top < 0 || top > 100 {
		return nil, functions.Permanent(sortie.Invalidf("variables.top", "%d outside 1..100", top))
	}
	call.Emit("start", fmt.Sprintf("analysing %s (%d bytes)", name, len(text)), map[string]any{"bytes": len(text)})
	st, err := analyse(ctx, text, top, func(pct, words int) error {
		return call.Emit("progress", fmt.Sprintf("%d%% read, %d words", pct, words),
			map[string]int{"percent": pct, "words": words})
	})
	if err != nil {
		return nil, err
	}
	st.Document = name
	return st, nil
}

func load(in Input) (name, text string, err error) {
	if in.Text != "" {
		if in.Document != "" {
			return "", "", sortie.Invalidf("variables", "set document or text, not both")
		}
		if n := utf8.RuneCountInString(in.Text); n > MaxTextChars {
			return "", "", sortie.Invalidf("variables.text", "%d characters, limit %d", n, MaxTextChars)
		}
		return "inline text", in.Text, nil
	}
	if in.Document == "" {
		in.Document = "opticks"
	}
	read, ok := documents[in.Document]
	if !ok {
		return "", "", sortie.Invalidf("variables.document", "unknown document %q (known: opticks)", in.Document)
	}
	if text, err = read(); err != nil {
		return "", "", fmt.Errorf("textstats: read %s: %w", in.Document, err)
	}
	return in.Document, text, nil
}

// counter accumulates statistics over a text, paragraph by paragraph.
type counter struct {
	st          Stats
	freq        map[string]int
	letters     int
	sentenceLen int
}

func analyse(ctx context.Context, text string, top int, progress func(pct, words int) error) (*Stats, error) {
	c := &counter{freq: map[string]int{}}
	c.st.Bytes = len(text)
	c.st.Lines = strings.Count(text, "\n")
	paragraphs := strings.Split(text, "\n\n")
	nextPct, done := 10, 0
	for _, p := range paragraphs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		done += len(p) + 2
		if strings.TrimSpace(p) == "" {
			continue
		}
		c.st.Paragraphs++
		c.paragraph(p)
		if p10 := 100 * done / max(len(text), 1) / 10 * 10; p10 >= nextPct && p10 < 100 {
			if err := progress(p10, c.st.Words); err != nil {
				return nil, err
			}
			nextPct = p10 + 10
		}
	}
	c.finish(top)
	return &c.st, nil
}

func (c *counter) paragraph(p string) {
	for _, tok := range strings.FieldsFunc(p, func(r rune) bool { return unicode.IsSpace(r) || r == '—' }) {
		w := normalise(tok)
		if w != "" {
			c.st.Words++
			c.sentenceLen++
			c.letters += len([]rune(w))
			c.freq[w]++
			if len([]rune(w)) > len([]rune(c.st.LongestWord)) {
				c.st.LongestWord = w
			}
		}
		if endsSentence(tok) && c.sentenceLen > 0 {
			c.endSentence()
		}
	}
	if c.sentenceLen > 0 {
		c.endSentence()
	}
}

func (c *counter) endSentence() {
	c.st.Sentences++
	c.st.LongestSentenceLen = max(c.st.LongestSentenceLen, c.sentenceLen)
	c.sentenceLen = 0
}

func (c *counter) finish(top int) {
	c.st.UniqueWords = len(c.freq)
	if c.st.Words > 0 {
		c.st.MeanWordLength = round2(float64(c.letters) / float64(c.st.Words))
		c.st.LexicalDiversity = round2(float64(c.st.UniqueWords) / float64(c.st.Words))
	}
	if c.st.Sentences > 0 {
		c.st.MeanSentenceWords = round2(float64(c.st.Words) / float64(c.st.Sentences))
	}
	c.st.TopTerms = topTerms(c.freq, top)
}

func round2(f float64) float64 { return float64(int(f*100+0.5)) / 100 }

// normalise lower-cases a token and strips punctuation and the underscores
// the transcription uses for italics; tokens that are not words are dropped.
func normalise(tok string) string {
	w := strings.ToLower(strings.TrimFunc(tok, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }))
	w = strings.ReplaceAll(w, "_", "")
	if w == "" || strings.IndexFunc(w, unicode.IsLetter) < 0 {
		return ""
	}
	// A word is letters, with inner apostrophes or hyphens; URLs and
	// numbers with units are not words.
	if strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' && r != '-' && r != '’' }) >= 0 {
		return ""
	}
	return w
}

func endsSentence(tok string) bool {
	t := strings.TrimRight(tok, "_)\"'”’")
	if t == "" {
		return false
	}
	switch t[len(t)-1] {
	case '.', '!', '?':
		return !abbreviation(strings.ToLower(strings.Trim(t, "_(")))
	}
	return false
}

var abbreviations = map[string]bool{"mr.": true, "dr.": true, "st.": true, "viz.": true, "i.e.": true, "e.g.": true, "&c.": true, "prop.": true, "fig.": true, "obs.": true, "exper.": true, "part.": true, "lib.": true}

func abbreviation(t string) bool { return abbreviations[t] || (len(t) == 2 && t[1] == '.') }

func topTerms(freq map[string]int, n int) []Term {
	terms := make([]Term, 0, len(freq))
	for w, c := range freq {
		if !stopwords[w] && len(w) > 2 {
			terms = append(terms, Term{Word: w, Count: c})
		}
	}
	sort.Slice(terms, func(i, j int) bool {
		if terms[i].Count != terms[j].Count {
			return terms[i].Count > terms[j].Count
		}
		return terms[i].Word < terms[j].Word
	})
	return terms[:min(n, len(terms))]
}
