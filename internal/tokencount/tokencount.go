package tokencount

import (
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

var codec = sync.OnceValues(func() (tokenizer.Codec, error) { return tokenizer.Get(tokenizer.O200kBase) })

// Count returns the number of o200k_base tokens in s. It panics if the
// embedded tokenizer data cannot be loaded, which is a build defect.
func Count(s string) int {
	c, err := codec()
	if err != nil {
		panic("tokencount: o200k_base: " + err.Error())
	}
	ids, _, err := c.Encode(s)
	if err != nil {
		panic("tokencount: encode: " + err.Error())
	}
	return len(ids)
}
