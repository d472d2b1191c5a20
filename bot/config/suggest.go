package config

import (
	"fmt"
	"strings"
)

// suggest returns ` (did you mean "x"?)` for the allowed word closest to s, when one
// is close enough to be a likely typo, else "".
func suggest(s string, allowed []string) string {
	best, bestDist := "", 3
	for _, a := range allowed {
		if strings.EqualFold(a, s) {
			return fmt.Sprintf("; did you mean %q?", a)
		}
		if d := distance(strings.ToLower(s), strings.ToLower(a)); d < bestDist {
			best, bestDist = a, d
		}
	}
	if best == "" || len(s) < 3 {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// distance is the Levenshtein edit distance between a and b.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
