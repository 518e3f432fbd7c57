package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Validate checks every value's range and the relations between values. Each
// problem names its variable; all problems are reported together.
func (c *Config) Validate() error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{name}, args...)...))
	}
	oneOf := func(name, v string, allowed ...string) {
		for _, a := range allowed {
			if v == a {
				return
			}
		}
		bad(name, "expected one of %s, got %q", strings.Join(allowed, ", "), v)
	}
	atLeast := func(name string, v, lo int64) {
		if v < lo {
			bad(name, "must be at least %d, got %d", lo, v)
		}
	}
	ratio := func(name string, v float64) {
		if v < 0 || v > 1 {
			bad(name, "must be between 0 and 1, got %g", v)
		}
	}
	port := func(name string, v int) {
		if v < 1 || v > 65535 {
			bad(name, "must be a TCP port (1-65535), got %d", v)
		}
	}
	httpURL := func(name, v string) {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(name, "expected an http(s) URL, got %q", v)
		}
	}

	oneOf("RAY_LOG_LEVEL", c.LogLevel, "debug", "info", "warn", "error")
	oneOf("RAY_ENGINE_MODE", c.Engine.Mode, "managed", "external")
	oneOf("RAY_CACHE_KEY_STRATEGY", c.Cache.KeyStrategy, "input+params", "input")
	oneOf("RAY_RATE_LIMIT_KEY_STRATEGY", c.RateLimit.KeyStrategy, "ip", "api-key", "ip+api-key")
	port("RAY_PORT", c.Port)
	port("RAY_LLAMA_CPP_PORT", c.LlamaCpp.Port)
	if c.Host == "" {
		bad("RAY_HOST", "must not be empty")
	}
	if c.Model.ID == "" {
		bad("RAY_MODEL_ID", "must not be empty")
	}
	if c.Engine.Mode == "external" {
		httpURL("RAY_MODEL_BASE_URL", c.Model.BaseURL)
	}
	if c.Engine.Mode == "managed" && c.LlamaCpp.ModelPath == "" && c.Model.Path == "" {
		bad("RAY_LLAMA_CPP_MODEL_PATH", "managed mode needs a model path (or RAY_MODEL_PATH)")
	}
	atLeast("RAY_SHUTDOWN_DRAIN_MS", int64(c.Engine.ShutdownDrainMS), 0)
	atLeast("RAY_MODEL_TIMEOUT_MS", int64(c.Model.TimeoutMS), 1)
	atLeast("RAY_MODEL_CONTEXT_WINDOW", int64(c.Model.ContextWindow), 16)
	atLeast("RAY_MODEL_MAX_OUTPUT_TOKENS", int64(c.Model.MaxOutputTokens), 1)
	atLeast("RAY_LLAMA_CPP_CTX_SIZE", int64(c.LlamaCpp.CtxSize), 16)
	atLeast("RAY_LLAMA_CPP_PARALLEL", int64(c.LlamaCpp.Parallel), 1)
	atLeast("RAY_LLAMA_CPP_THREADS", int64(c.LlamaCpp.Threads), 1)
	atLeast("RAY_LLAMA_CPP_THREADS_BATCH", int64(c.LlamaCpp.ThreadsBatch), 1)
	atLeast("RAY_LLAMA_CPP_THREADS_HTTP", int64(c.LlamaCpp.ThreadsHTTP), 1)
	atLeast("RAY_LLAMA_CPP_BATCH_SIZE", int64(c.LlamaCpp.BatchSize), 1)
	atLeast("RAY_LLAMA_CPP_UBATCH_SIZE", int64(c.LlamaCpp.UBatchSize), 1)
	if c.LlamaCpp.UBatchSize > c.LlamaCpp.BatchSize {
		bad("RAY_LLAMA_CPP_UBATCH_SIZE", "must not exceed RAY_LLAMA_CPP_BATCH_SIZE (%d), got %d", c.LlamaCpp.BatchSize, c.LlamaCpp.UBatchSize)
	}
	atLeast("RAY_LLAMA_CPP_CACHE_REUSE", int64(c.LlamaCpp.CacheReuse), 0)
	atLeast("RAY_LLAMA_CPP_CACHE_RAM_MIB", int64(c.LlamaCpp.CacheRAMMiB), 0)
	atLeast("RAY_LLAMA_CPP_SLOT_STATE_TTL_MS", int64(c.LlamaCpp.SlotStateTTLMS), 0)
	atLeast("RAY_LLAMA_CPP_SLOT_SNAPSHOT_TIMEOUT_MS", int64(c.LlamaCpp.SlotSnapshotTimeoutMS), 1)
	atLeast("RAY_LLAMA_CPP_PROMPT_SCAFFOLD_CACHE_ENTRIES", int64(c.LlamaCpp.PromptScaffoldCacheEntries), 0)
	atLeast("RAY_REQUEST_BODY_LIMIT_BYTES", c.Request.BodyLimitBytes, 256)
	atLeast("RAY_TELEMETRY_SLOW_REQUEST_THRESHOLD_MS", int64(c.Telemetry.SlowRequestThresholdMS), 0)
	atLeast("RAY_SCHEDULER_CONCURRENCY", int64(c.Scheduler.Concurrency), 1)
	atLeast("RAY_SCHEDULER_MAX_QUEUE", int64(c.Scheduler.MaxQueue), 0)
	atLeast("RAY_SCHEDULER_MAX_QUEUED_TOKENS", int64(c.Scheduler.MaxQueuedTokens), 1)
	atLeast("RAY_SCHEDULER_MAX_INFLIGHT_TOKENS", int64(c.Scheduler.MaxInflightTokens), 1)
	atLeast("RAY_SCHEDULER_REQUEST_TIMEOUT_MS", int64(c.Scheduler.RequestTimeoutMS), 1)
	atLeast("RAY_SCHEDULER_BATCH_WINDOW_MS", int64(c.Scheduler.BatchWindowMS), 0)
	atLeast("RAY_SCHEDULER_AFFINITY_LOOKAHEAD", int64(c.Scheduler.AffinityLookahead), 0)
	atLeast("RAY_SCHEDULER_SHORT_JOB_MAX_TOKENS", int64(c.Scheduler.ShortJobMaxTokens), 0)
	atLeast("RAY_CACHE_MAX_ENTRIES", int64(c.Cache.MaxEntries), 1)
	atLeast("RAY_CACHE_MAX_BYTES", c.Cache.MaxBytes, 1)
	atLeast("RAY_CACHE_TTL_MS", int64(c.Cache.TTLMS), 1)
	atLeast("RAY_DEGRADATION_QUEUE_DEPTH_THRESHOLD", int64(c.Degradation.QueueDepthThreshold), 0)
	atLeast("RAY_DEGRADATION_MAX_PROMPT_CHARS", int64(c.Degradation.MaxPromptChars), 1)
	atLeast("RAY_DEGRADATION_MAX_TOKENS", int64(c.Degradation.MaxTokens), 1)
	atLeast("RAY_DEGRADATION_MEMORY_RSS_THRESHOLD_MIB", int64(c.Degradation.MemoryRSSThresholdMiB), 1)
	ratio("RAY_DEGRADATION_MEMORY_CGROUP_PRESSURE_RATIO_THRESHOLD", c.Degradation.MemoryCgroupPressureRatioThreshold)
	ratio("RAY_DEGRADATION_CPU_THROTTLED_RATIO_THRESHOLD", c.Degradation.CPUThrottledRatioThreshold)
	for name, v := range map[string]float64{
		"RAY_DEGRADATION_MEMORY_PSI_SOME_AVG10_THRESHOLD": c.Degradation.MemoryPSISomeAvg10Threshold,
		"RAY_DEGRADATION_MEMORY_PSI_FULL_AVG10_THRESHOLD": c.Degradation.MemoryPSIFullAvg10Threshold,
		"RAY_DEGRADATION_CPU_PSI_SOME_AVG10_THRESHOLD":    c.Degradation.CPUPSISomeAvg10Threshold,
		"RAY_DEGRADATION_CPU_PSI_FULL_AVG10_THRESHOLD":    c.Degradation.CPUPSIFullAvg10Threshold,
	} {
		if v < 0 || v > 100 {
			bad(name, "must be a PSI percentage between 0 and 100, got %g", v)
		}
	}
	atLeast("RAY_ADAPTIVE_SAMPLE_SIZE", int64(c.Adaptive.SampleSize), 1)
	atLeast("RAY_ADAPTIVE_QUEUE_LATENCY_THRESHOLD_MS", int64(c.Adaptive.QueueLatencyThresholdMS), 0)
	ratio("RAY_ADAPTIVE_MAX_OUTPUT_REDUCTION_RATIO", c.Adaptive.MaxOutputReductionRatio)
	ratio("RAY_ADAPTIVE_DRAFT_PERCENTILE", c.Adaptive.DraftPercentile)
	ratio("RAY_ADAPTIVE_SHORT_PERCENTILE", c.Adaptive.ShortPercentile)
	atLeast("RAY_ADAPTIVE_MIN_OUTPUT_TOKENS", int64(c.Adaptive.MinOutputTokens), 1)
	atLeast("RAY_ADAPTIVE_FAMILY_HISTORY_SIZE", int64(c.Adaptive.FamilyHistorySize), 1)
	atLeast("RAY_ADAPTIVE_LEARNED_CAP_MIN_SAMPLES", int64(c.Adaptive.LearnedCapMinSamples), 1)
	atLeast("RAY_ADAPTIVE_LEARNED_CAP_HEADROOM_TOKENS", int64(c.Adaptive.LearnedCapHeadroomTokens), 0)
	atLeast("RAY_ASYNC_QUEUE_MAX_JOBS", int64(c.AsyncQueue.MaxJobs), 1)
	atLeast("RAY_ASYNC_QUEUE_MIN_FREE_STORAGE_MIB", int64(c.AsyncQueue.MinFreeStorageMiB), 0)
	atLeast("RAY_ASYNC_QUEUE_COMPLETED_TTL_MS", c.AsyncQueue.CompletedTTLMS, 1)
	atLeast("RAY_ASYNC_QUEUE_POLL_INTERVAL_MS", int64(c.AsyncQueue.PollIntervalMS), 1)
	atLeast("RAY_ASYNC_QUEUE_DISPATCH_CONCURRENCY", int64(c.AsyncQueue.DispatchConcurrency), 1)
	atLeast("RAY_ASYNC_QUEUE_MAX_ATTEMPTS", int64(c.AsyncQueue.MaxAttempts), 1)
	atLeast("RAY_ASYNC_QUEUE_CALLBACK_TIMEOUT_MS", int64(c.AsyncQueue.CallbackTimeoutMS), 1)
	atLeast("RAY_ASYNC_QUEUE_MAX_CALLBACK_ATTEMPTS", int64(c.AsyncQueue.MaxCallbackAttempts), 1)
	if c.AsyncQueue.Enabled && c.AsyncQueue.StorageDir == "" {
		bad("RAY_ASYNC_QUEUE_STORAGE_DIR", "must be set when RAY_ASYNC_QUEUE_ENABLED=true")
	}
	atLeast("RAY_RATE_LIMIT_WINDOW_MS", int64(c.RateLimit.WindowMS), 1)
	atLeast("RAY_RATE_LIMIT_MAX_REQUESTS", int64(c.RateLimit.MaxRequests), 1)
	atLeast("RAY_RATE_LIMIT_MAX_KEYS", int64(c.RateLimit.MaxKeys), 1)
	atLeast("RAY_DEPLOY_MEMORY_MIB", int64(c.Deploy.MemoryMiB), 0)
	atLeast("RAY_DEPLOY_MIN_FREE_STORAGE_MIB", int64(c.Deploy.MinFreeStorageMiB), 0)
	atLeast("RAY_DEPLOY_READY_TIMEOUT_SECONDS", int64(c.Deploy.ReadyTimeoutSeconds), 1)
	for name, v := range map[string]string{"RAY_MODEL_SHA256": c.Model.SHA256, "RAY_LLAMA_CPP_BINARY_SHA256": c.LlamaCpp.BinarySHA256} {
		if v != "" && !isHex64(v) {
			bad(name, "expected 64 hexadecimal digits")
		}
	}
	return errors.Join(errs...)
}

// CheckStartup reports what `raygw serve` cannot start without: with auth on,
// at least one client key.
func (c *Config) CheckStartup() error {
	if c.Auth.Enabled && len(c.Auth.APIKeys) == 0 {
		return fmt.Errorf("%s: RAY_AUTH_ENABLED=true but no client API keys are set (put comma-separated keys in %s, or set RAY_AUTH_ENABLED=false for a private gateway)", c.Auth.APIKeyEnv, c.Auth.APIKeyEnv)
	}
	return nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range strings.ToLower(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
