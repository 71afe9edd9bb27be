// Package resolve is permitd's location resolver: it turns free text
// ("Seatle", "spokane wa", "Mt Vernon, WA", "King Co", "98052-1234",
// "Bellevue, WA 98004") into ranked location candidates. Index is the
// in-memory engine behind the memory backend (it satisfies
// memory.Resolver); Parse, Score and Rank are backend-independent so a
// search-engine backend can re-rank its own fuzzy hits with the same
// scorer: q := ParseQuery(rq); for each hit m, ok := Score(q, hit);
// Rank(matches, rq.Limit).
//
// # Parsing
//
// Parse folds accents and case, drops apostrophes, splits on every other
// punctuation (so "Sedro-Woolley" = "Sedro Woolley") and expands
// abbreviations on both the query and the indexed names (Mt/Mount, Ft/Fort,
// St/Saint, Ste/Sainte, N/S/E/W, Pt/Point, Is/Island, Hts/Heights, ...).
// An ambiguous abbreviation also has other long forms that a query word
// matches, exactly only: "Pt" is Point or Port ("Pt Angeles" = Port
// Angeles, "Pt Pleasant" = Point Pleasant), while an indexed name keeps
// the first long form (an indexed "Pt." reads Point). It
// extracts a 5-digit ZIP and its +4 ("98052-1234", "980521234"), a leading
// "city of" (also "town of", "village of") and then builds readings of
// the name part: with a trailing state code or name
// stripped ("spokane wa", "Yakima, Washington", "Fort Wayne Indiana"),
// without it (the text may be a name: "Washington", "Indiana"), with a
// trailing "County"/"Co"/"Cnty"/"Parish" read as a county ("King Co" is
// both King County and King, Colorado), and with its words joined ("De
// Kalb" = "DeKalb"). Each location scores by its best reading.
//
// # Filler words
//
// Words people add that name no place (fillerPhrases): a country ("United
// States", "USA", "U.S.", "US", "America"), "state" / "state of", "city
// of", "county of", "the", street-style and vague-area words ("near",
// "downtown", "greater", "area", "street", "road", ...; not "st", "ste" or
// "in", which mean Saint, Sainte and Indiana). Punctuation already
// separates words. When the text has some, Parse adds the readings of the
// words without them (Reading.Dropped) before the readings of every word:
// "Spokane, Washington, USA" matches by the first, "The Dalles" and
// "State College" by the second, exactly, and the second wins for the
// same or another place, since a dropped reading scores fillerPenalty
// (0.08) less - more than the type and population priors can make up
// (0.06). A match by a dropped reading says filler_dropped and its
// confidence is fillerConfidence (0.05) lower. "state" lifts a state
// (stateWordBonus 0.06: "Washington State" is the state, not DC), "county
// of X" reads "X County", "city of" anywhere reads as a leading "city
// of". A text of filler words only has no reading and no candidates.
//
// # Typing
//
// A last word after other words may be as short as one letter: it must
// then begin the name word right after the words matched before it
// ("Lake Forest P": Lake Forest Park), its quality is that of a prefix of
// ratio 0 (one letter says nothing of the word's length, so population
// orders "St L": St. Louis first), and the letter as written counts ("n"
// is North, or the start of New). A county-type name matched without its
// suffix while the last word is being typed counts its suffix as a word
// not yet typed (partial name) and scores countyTypingPenalty (0.02)
// less: "Salt La" is Salt Lake City before Salt Lake County, "Salt Lake
// Co" the county. A word spelled out that matches only a one-word alias
// that abbreviates it (Montana's "MT" for "Mount") has quality 0.60,
// under every partial name, so "Mount" lists Mount Pleasant, Mount
// Vernon, ... first; "MT" still finds Montana as its alias.
//
// # Focus point
//
// With ResolveQuery.Focus, Score adds focusBoost = 0.08 * 2^(-d/50 km) to
// the raw score (d the great-circle distance to the location's lat/lon; 0
// for a location without coordinates). A match of quality under 0.97
// (typo, prefix, partial or bare name) is lifted to at most 0.969 raw
// (0.889 when filler words were dropped), under any exact name match
// (1.00 raw or more without a state mismatch, 0.92 by a reading without
// filler words): the focus orders same-named places and near partial matches
// among themselves, it never hides an exact match elsewhere. Match.Base
// keeps the score without the boost; Rank computes confidence and
// decision from it, so a focus changes the order, not how ambiguous a
// name is. A location gaining 0.01 raw or more says near_focus.
//
// A text whose only word is 3 or 4 digits ("981", "9810") is a ZIP
// prefix: it matches the ZIPs it begins and nothing else (the state and
// geo_type filters narrow them: "981" with state OR is empty). Mixed with
// other words such a number is not a ZIP prefix: it stays a word of the
// name, as a house number or noise would, and since no place name has it
// "Seattle 981" or "981 WA" matches nothing. Reading it there as a prefix
// would need a rule for which ZIP the other words mean, and dropping it
// would accept "Seattle" for a text that said more; a state belongs in
// the state filter. Fewer than 3 digits is no prefix ("98" is a thousand
// ZIPs).
//
// # Scoring
//
// Every query word must match a distinct word of a location's name or
// alias: exactly, within its typo budget (optimal string alignment: 1 edit
// for words of 4-7 letters, 2 from 8), or - the last word only, 3 letters
// or more, or 1 after other words - as a prefix ("Spoka" -> Spokane,
// "Port An" -> Port Angeles, "Lake Forest P" -> Lake Forest Park: a name
// being typed; see Typing).
// The words of a trailing state kept in the no-state reading match only
// exactly, except that the last may be the start of a name word ("Spokane
// Va" is Spokane Valley being typed as much as Spokane, Virginia; "Salt
// La" Salt Lake). A short last word is not expanded (it begins too many
// terms): the other words bound the candidates. Name quality,
// 0..1:
//
//	exact name                          1.00  exact
//	alias, abbreviation, joined words   0.97  alias
//	typo, e edits in all                0.92 - 0.04(e-1)  fuzzy
//	prefix, typed/whole length r        0.70 + 0.18r (- 0.04 per edit)  prefix
//	words out of order                  -0.05
//	name has more words than asked      x (0.62 + 0.30 matched/words)  prefix or fuzzy
//	bare county name ("King")           x 0.90  alias
//	ZIP by code                         1.00  postal_code
//	ZIP by prefix, typed/5 digits r     0.70 + 0.18r  prefix
//
// so exact beats alias beats fuzzy beats prefix beats partial names. The
// raw score adds context: a type prior (state +0.03, city +0.02, county
// +0.01, jurisdiction 0), a population prior 0.03*log10(pop+1)/7 (capped
// at 0.03: it orders same-named places, it never lifts a fuzzy match over
// an exact one), +0.04 when the text's state is the location's and -0.30
// when not (kept as a weak alternative), +0.03 for a county when the text
// says County, +0.06 for a city's jurisdiction when the text says "City
// of" (so "City of Seattle" ranks the jurisdiction first, "Seattle" the
// city) and -0.15 for counties and states then. A ZIP query scores ZIPs by
// code +0.08, +0.04 when the text's place is the ZIP's place and -0.20
// when not; names never match ZIPs, so a name query never puts a ZIP
// first, and a ZIP query ("Bellevue, WA 98004") puts the ZIP first - the
// finest geography consistent with every part of the text - with the city
// next. A ZIP prefix scores its ZIPs by the prefix quality alone. A
// reading without the text's filler words scores 0.08 less, a state 0.06
// more when the text said "state", a county typed without its suffix
// 0.02 less (see Filler words, Typing). Score = (raw + focus boost)/1.2,
// clamped to 0..1 and rounded to 4 decimals (see Focus point).
//
// The state and geo_type of the request are hard filters: a location
// outside them is never a candidate, however good its name.
//
// # Ranking
//
// Rank orders by Score descending, population descending, then (between
// two ZIPs) ZIP code ascending, then geo_id ascending, keeps Limit, and
// sets confidence and decision; see Rank. Two scopes of one place (a city
// and its jurisdiction, a county and its authority, a ZIP and its city)
// never make each other ambiguous. The ZIPs of one prefix score alike, so
// they follow population and then their codes (the national gazetteer
// gives ZIPs no population: "981" lists 98101, 98102, ...); a prefix
// match is never accepted, and several ZIPs of one prefix are ambiguous
// with each other.
//
// # Index design
//
// Index keeps one document per geo_id (location clone, name forms, its
// terms), token postings (term -> slots), joined-name postings
// ("sedrowoolley", exact lookup only), a ZIP map (5-digit code -> slots;
// a ZIP prefix looks up each code it can begin, at most 100 lookups of a
// few microseconds in all, so no sorted list of codes has to follow
// Upsert and Delete), a byte trie of terms and a deletion neighbourhood
// of the terms of 6+ letters. A query word
// expands to its exact term; to the terms within its typo budget - one
// edit by a trie walk carrying one banded edit-distance row per depth,
// two edits by looking up the hashes of the word's deletion variants
// (up to 2 bytes removed) and verifying each hit with the same OSA
// distance - unless the word is itself a term with more than 50 postings
// (a common name word is meant as typed: "Port" lists the Port names
// instead of Post, TX, one edit away and a whole name, which would
// outscore them; "Fort" no longer finds Ford, KS first; a rare real word
// such as "Yakama" still finds Yakima); and, for the last word, to up to 256 terms it begins (a trie
// subtree walk), unless the word is the reading's only word and itself a
// term with more than 50 postings ("Lake", "West", "San"). With another
// word, that word bounds the candidates (a slot must reach every word),
// and the expansion finds what the typo budget cannot ("Thousand Oak",
// "Iron Mount", "Newport New") for 5-20 us more on such texts. Alone, it
// would list every name the word begins and, since a prefix of a whole
// name scores over a partial name (0.70+0.18r against 0.77), rank Sandy
// over San Francisco for "San" and Newry over New York for "New": a
// common word typed whole and alone means the names that have it. (The
// OpenSearch backend knows no posting counts when it builds its fuzzy
// query: for a common word typed alone it still finds the typo
// neighbours and, always adding a prefix clause for the last word, the
// names the word begins; its ranking of such texts can differ.) The word with the fewest
// postings drives candidate generation, a slot is kept only when its
// terms reach every other word, and the scorer checks the rest. The
// bounds only limit recall of broad texts, never the scores. Upsert and Delete are incremental
// (postings are unordered slices, slots are reused, a term leaves the
// trie and the deletion neighbourhood with its last posting) so any
// location may be replaced or removed at any time.
//
// Why this shape and not a library: the national gazetteer is ~98k
// locations but only ~15k distinct words. A one-edit trie walk costs
// ~10 us; a two-edit walk over the trie cost 100-250 us for long words,
// which is why two-edit words use the deletion neighbourhood (~25 MB,
// a few microseconds per lookup). The neighbourhood is built from the
// posted terms by the first search that needs it, or ahead of it by
// Warm (about 0.1 s for the national gazetteer; memory's second-side
// build and serve's embedded feed call it), not term by term as
// locations arrive: that was a third of indexing a location, paid before
// a replay or a load was ready. Whole queries cost tens of microseconds
// of CPU (see BenchmarkResolve). bleve (not in go.mod) brings an analysis
// pipeline, segment merging and per-query allocation that do not fit
// p99 <= 1 ms with single-document updates under a read lock, and would
// still need this scorer on top; tidwall/btree gives sorted prefix scans
// but no typo search, which the trie also covers.
//
// # Concurrency
//
// Upsert and Delete take the index's write lock and Search its read lock
// (inside memory.Store, whose own lock already orders them, the inner
// lock is uncontended). Search mutates nothing shared: the typo
// expansions it memoises, its candidate set and its buffers are created
// per call. Many Searches run in parallel.
package resolve
