// Package editdistance measures how far apart two names are, so that an
// unknown operation or field can be answered with "did you mean ...?".
//
//	editdistance.Levenshtein("lsit", "list") // 2
package editdistance
