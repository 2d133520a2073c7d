package textstats

import "strings"

// stopwords are left out of the top terms: English function words, and the
// archaic forms the 1730 text uses (hath, doth, thereof).
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all also am an and any are as at be
	because been before being below between both but by can could did do does doing down during each
	few for from further had has have having he her here hers him his how i if in into is it its itself
	just me more most my no nor not now of off on once only or other our ours out over own same she
	should so some such than that the their theirs them then there these they this those through to too
	under until up upon very was we were what when where which while who whom why will with would you
	your yours hath doth thereof therefore thereby whereby which may might must shall one two three
	made make being been those these also same like than most than where whence thence hence yet
	either neither whether though although unless every many much less great greater`) {
		m[w] = true
	}
	return m
}()
