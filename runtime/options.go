package runtime

import "time"

// Options configures a Runtime. A nil *Options and every zero field mean the
// documented default.
type Options struct {
	// Timeout is the default execution deadline. Zero means 30s.
	Timeout time.Duration
	// MaxTimeout caps any per-execution timeout. Zero means 300s.
	MaxTimeout time.Duration
	// MaxCodeBytes bounds the size of a script. Zero means 256 KiB.
	MaxCodeBytes int
	// MaxHostCalls bounds host operation calls per execution. Zero means 1000.
	MaxHostCalls int
	// Concurrency bounds host calls running at once. Zero means 32.
	Concurrency int
	// MaxResultBytes bounds the JSON result; larger results are truncated
	// with a marker. Zero means 64 KiB.
	MaxResultBytes int
	// MaxConsoleBytes bounds captured console output. Zero means 16 KiB.
	MaxConsoleBytes int
	// MaxCallStackSize bounds JavaScript call depth. Zero means 1024.
	MaxCallStackSize int
	// MaxTimers bounds the timers (setTimeout, sleep) pending at once.
	// Zero means 10,000.
	MaxTimers int
	// MaxResultDepth bounds how deeply the result's arrays and objects
	// nest. Zero means 256.
	MaxResultDepth int
	// CacheEntries is how many transpiled scripts are kept, keyed by code
	// hash. Zero means 256; negative disables the cache.
	CacheEntries int
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if r.Timeout == 0 {
		r.Timeout = 30 * time.Second
	}
	if r.MaxTimeout == 0 {
		r.MaxTimeout = 300 * time.Second
	}
	if r.Timeout > r.MaxTimeout {
		r.Timeout = r.MaxTimeout
	}
	def(&r.MaxCodeBytes, 256<<10)
	def(&r.MaxHostCalls, 1000)
	def(&r.Concurrency, 32)
	def(&r.MaxResultBytes, 64<<10)
	def(&r.MaxConsoleBytes, 16<<10)
	def(&r.MaxCallStackSize, 1024)
	def(&r.MaxTimers, 10_000)
	def(&r.MaxResultDepth, 256)
	def(&r.CacheEntries, 256)
	return r
}
