// Package tokencount counts tokens the way the models kubecode serves see
// them: o200k_base, from tokenizer data embedded in a Go module (nothing is
// downloaded at run time). Tests and benchmarks use it to hold answers to
// their token budgets.
//
//	n := tokencount.Count(answer) // o200k_base tokens
package tokencount
