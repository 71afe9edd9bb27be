package readmodel

import (
	"strings"
	"unicode"
)

// The english analysis of permit full text (q), the same chain as
// OpenSearch's built-in "english" analyzer, so both backends match the
// same words:
//
//  1. tokenize (UAX #29 word boundaries, as the standard tokenizer reads
//     Latin text): a word is a run of letters, digits and '_'; '.', an
//     apostrophe (' or ’) and ':' between two letters, and '.', ',' and
//     ';' between two digits, stay inside it ("o'neil", "u.s", "3.5");
//  2. english possessive: a trailing 's or ’s is removed;
//  3. lower case;
//  4. english stop words are dropped (Lucene's list: a an and are as at
//     be but by for if in into is it no not of on or such that the their
//     then there these they this to was will with);
//  5. the Porter stemmer (Porter 1980 as published in its reference ANSI
//     C implementation, which Lucene's PorterStemFilter ports: steps 1a,
//     1b, 1c, 2 including bli->ble and logi->log, 3, 4, 5a, 5b); words of
//     one or two letters are not stemmed.
//
// EnglishTerms returns the analysed words of s in order, duplicates kept.
func EnglishTerms(s string) []string {
	var out []string
	for _, w := range tokenize(s) {
		w = possessive(w)
		w = strings.ToLower(w)
		if w == "" || englishStop[w] {
			continue
		}
		out = append(out, PorterStem(w))
	}
	return out
}

var englishStop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("a an and are as at be but by for if in into is it no not of on or such that the their then there these they this to was will with") {
		m[w] = true
	}
	return m
}()

func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

// tokenize splits s into words (step 1).
func tokenize(s string) []string {
	rs := []rune(s)
	var out []string
	start := -1
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if wordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i+1 < len(rs) && i > 0 {
			prev, next := rs[i-1], rs[i+1]
			letters := unicode.IsLetter(prev) && unicode.IsLetter(next)
			digits := unicode.IsDigit(prev) && unicode.IsDigit(next)
			switch {
			case (r == '.' || r == '\'' || r == '’') && (letters || digits),
				r == ':' && letters, (r == ',' || r == ';') && digits:
				continue
			}
		}
		if start >= 0 {
			out = append(out, string(rs[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, string(rs[start:]))
	}
	return out
}

// possessive removes a trailing 's (step 2).
func possessive(w string) string {
	for _, suf := range []string{"'s", "'S", "’s", "’S"} {
		if strings.HasSuffix(w, suf) {
			return w[:len(w)-len(suf)]
		}
	}
	return w
}

// PorterStem stems one lower-case word (step 5). Words with characters
// outside a-z are stemmed on their bytes as Lucene does (non-letters are
// consonants).
func PorterStem(w string) string {
	if len(w) <= 2 {
		return w
	}
	s := &stemmer{b: []byte(w)}
	s.k = len(s.b) - 1
	s.step1ab()
	if s.k > 0 {
		s.step1c()
		s.step2()
		s.step3()
		s.step4()
		s.step5()
	}
	return string(s.b[:s.k+1])
}

// stemmer follows the reference implementation: b[0..k] is the word, j
// the end of the stem when a suffix matched.
type stemmer struct {
	b    []byte
	k, j int
}

func (s *stemmer) cons(i int) bool {
	switch s.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		if i == 0 {
			return true
		}
		return !s.cons(i - 1)
	}
	return true
}

// m measures the consonant-vowel sequences of b[0..j]: the m of
// [C](VC)^m[V].
func (s *stemmer) m() int {
	n := 0
	i := s.run(0, true)
	for i <= s.j {
		i = s.run(i, false)
		if i > s.j {
			break
		}
		n++
		i = s.run(i, true)
	}
	return n
}

// run is the first index from i, at most j+1, whose letter is not a
// consonant (consonants true) or not a vowel (false).
func (s *stemmer) run(i int, consonants bool) int {
	for i <= s.j && s.cons(i) == consonants {
		i++
	}
	return i
}

func (s *stemmer) vowelInStem() bool {
	for i := 0; i <= s.j; i++ {
		if !s.cons(i) {
			return true
		}
	}
	return false
}

func (s *stemmer) doublec(j int) bool {
	return j >= 1 && s.b[j] == s.b[j-1] && s.cons(j)
}

func (s *stemmer) cvc(i int) bool {
	if i < 2 || !s.cons(i) || s.cons(i-1) || !s.cons(i-2) {
		return false
	}
	switch s.b[i] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

func (s *stemmer) ends(suf string) bool {
	n := len(suf)
	if n > s.k+1 || string(s.b[s.k-n+1:s.k+1]) != suf {
		return false
	}
	s.j = s.k - n
	return true
}

func (s *stemmer) setto(r string) {
	s.b = append(s.b[:s.j+1], r...)
	s.k = s.j + len(r)
}

func (s *stemmer) r(str string) {
	if s.m() > 0 {
		s.setto(str)
	}
}

func (s *stemmer) step1ab() {
	if s.b[s.k] == 's' {
		switch {
		case s.ends("sses"):
			s.k -= 2
		case s.ends("ies"):
			s.setto("i")
		case s.k >= 1 && s.b[s.k-1] != 's':
			s.k--
		}
	}
	s.b = s.b[:s.k+1]
	if s.ends("eed") {
		if s.m() > 0 {
			s.k--
		}
	} else if (s.ends("ed") || s.ends("ing")) && s.vowelInStem() {
		s.k = s.j
		s.b = s.b[:s.k+1]
		switch {
		case s.ends("at"):
			s.setto("ate")
		case s.ends("bl"):
			s.setto("ble")
		case s.ends("iz"):
			s.setto("ize")
		case s.doublec(s.k):
			s.k--
			switch s.b[s.k] {
			case 'l', 's', 'z':
				s.k++
			}
		default:
			s.j = s.k
			if s.m() == 1 && s.cvc(s.k) {
				s.setto("e")
			}
		}
	}
	s.b = s.b[:s.k+1]
}

func (s *stemmer) step1c() {
	if s.ends("y") && s.vowelInStem() {
		s.b[s.k] = 'i'
	}
}

var step2Rules = [][2]string{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"}, {"izer", "ize"},
	{"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"},
	{"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"}, {"alism", "al"}, {"iveness", "ive"},
	{"fulness", "ful"}, {"ousness", "ous"}, {"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"},
	{"logi", "log"},
}

var step3Rules = [][2]string{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"}, {"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

// applyFirst applies the first rule whose suffix ends the word (the
// reference switches on the penultimate letter; the first match is the
// same one).
func (s *stemmer) applyFirst(rules [][2]string) {
	for _, r := range rules {
		if s.ends(r[0]) {
			s.r(r[1])
			return
		}
	}
}

func (s *stemmer) step2() { s.applyFirst(step2Rules) }
func (s *stemmer) step3() { s.applyFirst(step3Rules) }

var step4Suffixes = []string{"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
	"ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize"}

func (s *stemmer) step4() {
	if s.k < 1 {
		return
	}
	matched := false
	// the reference tries suffixes grouped by the penultimate letter; within
	// a group the longest first (ement before ment before ent)
	for _, suf := range step4Suffixes {
		if s.ends(suf) {
			if suf == "ion" && !(s.j >= 0 && (s.b[s.j] == 's' || s.b[s.j] == 't')) {
				continue
			}
			matched = true
			break
		}
	}
	if matched && s.m() > 1 {
		s.k = s.j
		s.b = s.b[:s.k+1]
	}
}

func (s *stemmer) step5() {
	s.j = s.k
	if s.b[s.k] == 'e' {
		a := s.m()
		if a > 1 || a == 1 && !s.cvc(s.k-1) {
			s.k--
		}
	}
	if s.b[s.k] == 'l' && s.doublec(s.k) && s.m() > 1 {
		s.k--
	}
	s.b = s.b[:s.k+1]
}
