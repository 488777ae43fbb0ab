package anamnesis

// Helpers only tests use, kept out of the package's API.

// TitleSimilarity is the Dice coefficient of two titles' content words
// (titleWords): 1 for the same words, 0 for none shared.
func TitleSimilarity(a, b string) float64 {
	return dice(titleWords(a), titleWords(b))
}
