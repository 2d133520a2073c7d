package textstats

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

func TestAnalyseSmallText(t *testing.T) {
	text := "The light is bent. Light bends again!\n\nRays of _light_ are refracted, viz. bent? Yes."
	var pcts []int
	st, err := analyse(context.Background(), text, 3, func(pct, _ int) error { pcts = append(pcts, pct); return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{Bytes: len(text), Lines: 2, Paragraphs: 2, Words: 15, UniqueWords: 12, Sentences: 4,
		MeanSentenceWords: 3.75, MeanWordLength: 4.13, LongestWord: "refracted", LexicalDiversity: 0.8,
		LongestSentenceLen: 7, TopTerms: []Term{{"light", 3}, {"bent", 2}, {"bends", 1}}}
	if diff := cmp.Diff(want, *st); diff != "" {
		t.Errorf("analyse(small text) mismatch (-want +got):\n%s", diff)
	}
	// The first paragraph is 39 of 86 bytes: progress reports 40% once.
	if diff := cmp.Diff([]int{40}, pcts); diff != "" {
		t.Errorf("progress percents mismatch (-want +got):\n%s", diff)
	}
}

func TestAnalyseOpticks(t *testing.T) {
	_, text, err := load(Input{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := analyse(context.Background(), text, 5, func(int, int) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	// Opticks is about light and colours: both must lead the terms.
	if st.Words < 90_000 || st.Sentences < 2_000 || st.TopTerms[0].Word != "light" {
		t.Errorf("analyse(opticks) = %d words, %d sentences, top %v; want > 90k words, > 2k sentences, light first",
			st.Words, st.Sentences, st.TopTerms)
	}
}

func TestAnalyseStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, text, _ := load(Input{})
	if _, err := analyse(ctx, text, 5, func(int, int) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("analyse(cancelled ctx) = %v, want context.Canceled", err)
	}
}

func TestLoadRefusesUnknownDocumentsAndPaths(t *testing.T) {
	for _, in := range []Input{{Document: "../../etc/passwd"}, {Document: "texts/opticks.txt.gz"}, {Document: "opticks", Text: "x"}} {
		if _, _, err := load(in); !errors.Is(err, sortie.ErrInvalidArgument) {
			t.Errorf("load(%+v) = %v, want ErrInvalidArgument", in, err)
		}
	}
	// The limit counts characters, as the schema's maxLength does: the
	// longest text the schema takes (twice as many bytes) is loaded.
	if _, _, err := load(Input{Text: strings.Repeat("é", MaxTextChars)}); err != nil {
		t.Errorf("load(%d characters of é) = %v, want it taken", MaxTextChars, err)
	}
	big := Input{Text: strings.Repeat("é", MaxTextChars+1)}
	if _, _, err := load(big); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("load(%d bytes) = %v, want ErrInvalidArgument", len(big.Text), err)
	}
}

func TestAgentJSONMatchesManifest(t *testing.T) {
	b, err := os.ReadFile("agent.json")
	if err != nil {
		t.Fatal(err)
	}
	var m sortie.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Manifest, m); diff != "" {
		t.Errorf("agent.json differs from textstats.Manifest (-go +json):\n%s", diff)
	}
}
