// Package config owns raygw's configuration: the machine-class profiles, the
// RAY_* variable registry, the env-file reader and validation. A value comes
// from, in rising precedence: a profile default, a JSON config file, an env
// file, the process environment, and command-line flags.
package config

import (
	"net"
	"strconv"
	"time"
)

// Config is the resolved configuration. Every field tagged `env` is one RAY_*
// setting; the tag is the variable's name and `doc` its one-line meaning.
type Config struct {
	Profile  string `env:"RAY_PROFILE" doc:"machine-class profile: 1b (4 GB) or 1b-8gb (8 GB)"`
	Host     string `env:"RAY_HOST" doc:"address the gateway listens on"`
	Port     int    `env:"RAY_PORT" doc:"port the gateway listens on"`
	LogLevel string `env:"RAY_LOG_LEVEL" doc:"debug, info, warn or error"`
	StateDir string `env:"RAY_STATE_DIR" doc:"directory for the gateway's own state (deployments database)"`

	Engine         Engine
	Model          Model
	LlamaCpp       LlamaCpp
	Telemetry      Telemetry
	Request        Request
	Scheduler      Scheduler
	Cache          Cache
	PromptCompiler PromptCompiler
	Degradation    Degradation
	Adaptive       Adaptive
	AsyncQueue     AsyncQueue
	Auth           Auth
	Admin          Admin
	RateLimit      RateLimit
	Deploy         Deploy
}

// Engine selects how the gateway reaches its inference engine.
type Engine struct {
	Mode            string `env:"RAY_ENGINE_MODE" doc:"managed: raygw supervises llama-server; external: use RAY_MODEL_BASE_URL"`
	ShutdownDrainMS int    `env:"RAY_SHUTDOWN_DRAIN_MS" doc:"how long SIGTERM waits for in-flight requests before stopping"`
}

// Model describes the served model as clients and operators see it.
type Model struct {
	ID                    string   `env:"RAY_MODEL_ID" doc:"model name clients send as \"model\""`
	BaseURL               string   `env:"RAY_MODEL_BASE_URL" doc:"engine base URL in external mode"`
	Ref                   string   `env:"RAY_MODEL_REF" doc:"model name sent upstream"`
	Family                string   `env:"RAY_MODEL_FAMILY" doc:"model family label"`
	Quantization          string   `env:"RAY_MODEL_QUANTIZATION" doc:"quantization label (e.g. q4_k_m)"`
	WarmOnBoot            bool     `env:"RAY_MODEL_WARM_ON_BOOT" doc:"send one tiny completion after the engine becomes ready"`
	Path                  string   `env:"RAY_MODEL_PATH" doc:"GGUF file path"`
	TimeoutMS             int      `env:"RAY_MODEL_TIMEOUT_MS" doc:"upstream request timeout (504 past it)"`
	ContextWindow         int      `env:"RAY_MODEL_CONTEXT_WINDOW" doc:"model context window in tokens"`
	MaxOutputTokens       int      `env:"RAY_MODEL_MAX_OUTPUT_TOKENS" doc:"cap applied to max_tokens"`
	TokensPerSecondTarget float64  `env:"RAY_MODEL_TOKENS_PER_SECOND_TARGET" doc:"expected decode speed, for planning"`
	MemoryClassMiB        int      `env:"RAY_MODEL_MEMORY_CLASS_MIB" doc:"memory class of the machine the model is sized for"`
	PreferredCtxSize      int      `env:"RAY_MODEL_PREFERRED_CTX_SIZE" doc:"preferred engine context size"`
	APIKeyEnv             string   `env:"RAY_MODEL_API_KEY_ENV" doc:"variable holding the Bearer token sent upstream (empty: none)"`
	SourcePath            string   `env:"RAY_MODEL_SOURCE_PATH" doc:"GGUF to stage from"`
	SHA256                string   `env:"RAY_MODEL_SHA256" doc:"expected SHA-256 of the GGUF source"`
	Aliases               []string `env:"RAY_MODEL_ALIASES" doc:"other model names accepted for this model"`

	// APIKey is the upstream Bearer token read from the variable APIKeyEnv names.
	APIKey string
}

// LlamaCpp is the llama-server launch profile.
type LlamaCpp struct {
	BaseURL                    string `env:"RAY_LLAMA_CPP_BASE_URL" doc:"llama-server base URL"`
	ModelRef                   string `env:"RAY_LLAMA_CPP_MODEL_REF" doc:"model name llama-server answers to"`
	ModelPath                  string `env:"RAY_LLAMA_CPP_MODEL_PATH" doc:"GGUF path passed to llama-server -m"`
	BinaryPath                 string `env:"RAY_LLAMA_CPP_BINARY_PATH" doc:"llama-server executable"`
	BinarySourcePath           string `env:"RAY_LLAMA_CPP_BINARY_SOURCE_PATH" doc:"llama-server to stage from"`
	BinarySHA256               string `env:"RAY_LLAMA_CPP_BINARY_SHA256" doc:"expected SHA-256 of the llama-server source"`
	Alias                      string `env:"RAY_LLAMA_CPP_ALIAS" doc:"--alias"`
	Host                       string `env:"RAY_LLAMA_CPP_HOST" doc:"--host"`
	Port                       int    `env:"RAY_LLAMA_CPP_PORT" doc:"--port"`
	CtxSize                    int    `env:"RAY_LLAMA_CPP_CTX_SIZE" doc:"--ctx-size (shared by all slots)"`
	Parallel                   int    `env:"RAY_LLAMA_CPP_PARALLEL" doc:"--parallel (slots)"`
	Threads                    int    `env:"RAY_LLAMA_CPP_THREADS" doc:"--threads"`
	ThreadsBatch               int    `env:"RAY_LLAMA_CPP_THREADS_BATCH" doc:"--threads-batch"`
	ThreadsHTTP                int    `env:"RAY_LLAMA_CPP_THREADS_HTTP" doc:"--threads-http"`
	BatchSize                  int    `env:"RAY_LLAMA_CPP_BATCH_SIZE" doc:"--batch-size"`
	UBatchSize                 int    `env:"RAY_LLAMA_CPP_UBATCH_SIZE" doc:"--ubatch-size"`
	CacheReuse                 int    `env:"RAY_LLAMA_CPP_CACHE_REUSE" doc:"--cache-reuse"`
	CacheRAMMiB                int    `env:"RAY_LLAMA_CPP_CACHE_RAM_MIB" doc:"--cache-ram"`
	CachePrompt                bool   `env:"RAY_LLAMA_CPP_CACHE_PROMPT" doc:"send cache_prompt with each request"`
	SlotStateTTLMS             int    `env:"RAY_LLAMA_CPP_SLOT_STATE_TTL_MS" doc:"how long a /slots snapshot is reused"`
	SlotSnapshotTimeoutMS      int    `env:"RAY_LLAMA_CPP_SLOT_SNAPSHOT_TIMEOUT_MS" doc:"bound on one /slots read"`
	PromptScaffoldCacheEntries int    `env:"RAY_LLAMA_CPP_PROMPT_SCAFFOLD_CACHE_ENTRIES" doc:"prompt prefixes remembered per slot map"`
	ContinuousBatching         bool   `env:"RAY_LLAMA_CPP_CONTINUOUS_BATCHING" doc:"--cont-batching / --no-cont-batching"`
	EnableMetrics              bool   `env:"RAY_LLAMA_CPP_ENABLE_METRICS" doc:"--metrics"`
	ExposeSlots                bool   `env:"RAY_LLAMA_CPP_EXPOSE_SLOTS" doc:"--slots / --no-slots"`
	Warmup                     bool   `env:"RAY_LLAMA_CPP_WARMUP" doc:"--warmup / --no-warmup"`
	EnableUnifiedKV            bool   `env:"RAY_LLAMA_CPP_ENABLE_UNIFIED_KV" doc:"--kv-unified / --no-kv-unified"`
	CacheIdleSlots             bool   `env:"RAY_LLAMA_CPP_CACHE_IDLE_SLOTS" doc:"--cache-idle-slots / --no-cache-idle-slots"`
	ContextShift               bool   `env:"RAY_LLAMA_CPP_CONTEXT_SHIFT" doc:"--context-shift / --no-context-shift"`
}

// Telemetry configures logs and metrics.
type Telemetry struct {
	ServiceName            string `env:"RAY_TELEMETRY_SERVICE_NAME" doc:"service name in logs and metrics"`
	IncludeDebugMetrics    bool   `env:"RAY_TELEMETRY_INCLUDE_DEBUG_METRICS" doc:"export per-stage debug metrics"`
	SlowRequestThresholdMS int    `env:"RAY_TELEMETRY_SLOW_REQUEST_THRESHOLD_MS" doc:"requests slower than this are logged"`
}

// Request bounds one HTTP request.
type Request struct {
	BodyLimitBytes int64 `env:"RAY_REQUEST_BODY_LIMIT_BYTES" doc:"largest accepted request body (413 past it)"`
}

// Scheduler is the admission scheduler.
type Scheduler struct {
	Concurrency       int  `env:"RAY_SCHEDULER_CONCURRENCY" doc:"requests running on the engine at once"`
	MaxQueue          int  `env:"RAY_SCHEDULER_MAX_QUEUE" doc:"requests allowed to wait"`
	MaxQueuedTokens   int  `env:"RAY_SCHEDULER_MAX_QUEUED_TOKENS" doc:"token budget of all waiting requests"`
	MaxInflightTokens int  `env:"RAY_SCHEDULER_MAX_INFLIGHT_TOKENS" doc:"token budget of all running requests"`
	RequestTimeoutMS  int  `env:"RAY_SCHEDULER_REQUEST_TIMEOUT_MS" doc:"longest wait in the queue (504 past it)"`
	DedupeInflight    bool `env:"RAY_SCHEDULER_DEDUPE_INFLIGHT" doc:"identical deterministic requests share one run"`
	BatchWindowMS     int  `env:"RAY_SCHEDULER_BATCH_WINDOW_MS" doc:"arrivals this close together are ordered together"`
	AffinityLookahead int  `env:"RAY_SCHEDULER_AFFINITY_LOOKAHEAD" doc:"queued requests scanned for a slot-affine one"`
	SlotAffinity      bool `env:"RAY_SCHEDULER_SLOT_AFFINITY_ENABLED" doc:"route prompts to the llama.cpp slot holding their prefix"`
	ShortJobMaxTokens int  `env:"RAY_SCHEDULER_SHORT_JOB_MAX_TOKENS" doc:"output caps up to this run ahead of long jobs"`
}

// Cache is the response cache.
type Cache struct {
	Enabled     bool   `env:"RAY_CACHE_ENABLED" doc:"cache deterministic responses"`
	MaxEntries  int    `env:"RAY_CACHE_MAX_ENTRIES" doc:"entries kept"`
	MaxBytes    int64  `env:"RAY_CACHE_MAX_BYTES" doc:"bytes kept"`
	TTLMS       int    `env:"RAY_CACHE_TTL_MS" doc:"entry lifetime"`
	KeyStrategy string `env:"RAY_CACHE_KEY_STRATEGY" doc:"input+params or input"`
}

// PromptCompiler shapes prompts before they reach the engine.
type PromptCompiler struct {
	Enabled             bool     `env:"RAY_PROMPT_COMPILER_ENABLED" doc:"run the prompt compiler"`
	CollapseWhitespace  bool     `env:"RAY_PROMPT_COMPILER_COLLAPSE_WHITESPACE" doc:"collapse runs of spaces outside code blocks"`
	DedupeRepeatedLines bool     `env:"RAY_PROMPT_COMPILER_DEDUPE_REPEATED_LINES" doc:"drop repeated identical lines outside code blocks"`
	FamilyMetadataKeys  []string `env:"RAY_PROMPT_COMPILER_FAMILY_METADATA_KEYS" doc:"metadata keys naming the prompt family"`
}

// Degradation is the graceful-degradation policy under pressure.
type Degradation struct {
	Enabled                            bool    `env:"RAY_GRACEFUL_DEGRADATION_ENABLED" doc:"clamp or shed work under pressure"`
	QueueDepthThreshold                int     `env:"RAY_DEGRADATION_QUEUE_DEPTH_THRESHOLD" doc:"queue depth that counts as pressure"`
	MaxPromptChars                     int     `env:"RAY_DEGRADATION_MAX_PROMPT_CHARS" doc:"prompt size allowed under pressure"`
	MaxTokens                          int     `env:"RAY_DEGRADATION_MAX_TOKENS" doc:"max_tokens allowed under pressure"`
	MemoryRSSThresholdMiB              int     `env:"RAY_DEGRADATION_MEMORY_RSS_THRESHOLD_MIB" doc:"gateway RSS that counts as pressure"`
	MemoryCgroupPressureRatioThreshold float64 `env:"RAY_DEGRADATION_MEMORY_CGROUP_PRESSURE_RATIO_THRESHOLD" doc:"cgroup memory.current/memory.max that counts as pressure"`
	CPUThrottledRatioThreshold         float64 `env:"RAY_DEGRADATION_CPU_THROTTLED_RATIO_THRESHOLD" doc:"cgroup throttled ratio that counts as pressure"`
	MemoryPSISomeAvg10Threshold        float64 `env:"RAY_DEGRADATION_MEMORY_PSI_SOME_AVG10_THRESHOLD" doc:"memory PSI some avg10"`
	MemoryPSIFullAvg10Threshold        float64 `env:"RAY_DEGRADATION_MEMORY_PSI_FULL_AVG10_THRESHOLD" doc:"memory PSI full avg10"`
	CPUPSISomeAvg10Threshold           float64 `env:"RAY_DEGRADATION_CPU_PSI_SOME_AVG10_THRESHOLD" doc:"CPU PSI some avg10"`
	CPUPSIFullAvg10Threshold           float64 `env:"RAY_DEGRADATION_CPU_PSI_FULL_AVG10_THRESHOLD" doc:"CPU PSI full avg10"`
}

// Adaptive is the learned output-cap tuner.
type Adaptive struct {
	Enabled                      bool    `env:"RAY_ADAPTIVE_TUNING_ENABLED" doc:"adapt output caps to observed speed"`
	SampleSize                   int     `env:"RAY_ADAPTIVE_SAMPLE_SIZE" doc:"recent requests considered"`
	QueueLatencyThresholdMS      int     `env:"RAY_ADAPTIVE_QUEUE_LATENCY_THRESHOLD_MS" doc:"queue delay that triggers reduction"`
	MinCompletionTokensPerSecond float64 `env:"RAY_ADAPTIVE_MIN_COMPLETION_TOKENS_PER_SECOND" doc:"decode speed that triggers reduction"`
	MaxOutputReductionRatio      float64 `env:"RAY_ADAPTIVE_MAX_OUTPUT_REDUCTION_RATIO" doc:"largest cut of max_tokens"`
	MinOutputTokens              int     `env:"RAY_ADAPTIVE_MIN_OUTPUT_TOKENS" doc:"floor of an adapted cap"`
	LearnedFamilyCapEnabled      bool    `env:"RAY_ADAPTIVE_LEARNED_FAMILY_CAP_ENABLED" doc:"learn per-family output caps"`
	FamilyHistorySize            int     `env:"RAY_ADAPTIVE_FAMILY_HISTORY_SIZE" doc:"samples kept per family"`
	LearnedCapMinSamples         int     `env:"RAY_ADAPTIVE_LEARNED_CAP_MIN_SAMPLES" doc:"samples before a learned cap applies"`
	DraftPercentile              float64 `env:"RAY_ADAPTIVE_DRAFT_PERCENTILE" doc:"percentile for draft-length families"`
	ShortPercentile              float64 `env:"RAY_ADAPTIVE_SHORT_PERCENTILE" doc:"percentile for short families"`
	LearnedCapHeadroomTokens     int     `env:"RAY_ADAPTIVE_LEARNED_CAP_HEADROOM_TOKENS" doc:"tokens added above the learned percentile"`
}

// AsyncQueue is the durable job queue.
type AsyncQueue struct {
	Enabled                     bool     `env:"RAY_ASYNC_QUEUE_ENABLED" doc:"accept async jobs"`
	StorageDir                  string   `env:"RAY_ASYNC_QUEUE_STORAGE_DIR" doc:"where jobs are stored"`
	MaxJobs                     int      `env:"RAY_ASYNC_QUEUE_MAX_JOBS" doc:"jobs kept at once"`
	MinFreeStorageMiB           int      `env:"RAY_ASYNC_QUEUE_MIN_FREE_STORAGE_MIB" doc:"free space required to accept a job"`
	CompletedTTLMS              int64    `env:"RAY_ASYNC_QUEUE_COMPLETED_TTL_MS" doc:"how long finished jobs are kept"`
	PollIntervalMS              int      `env:"RAY_ASYNC_QUEUE_POLL_INTERVAL_MS" doc:"dispatcher poll interval"`
	DispatchConcurrency         int      `env:"RAY_ASYNC_QUEUE_DISPATCH_CONCURRENCY" doc:"jobs run at once"`
	MaxAttempts                 int      `env:"RAY_ASYNC_QUEUE_MAX_ATTEMPTS" doc:"tries per job"`
	CallbackTimeoutMS           int      `env:"RAY_ASYNC_QUEUE_CALLBACK_TIMEOUT_MS" doc:"webhook timeout"`
	MaxCallbackAttempts         int      `env:"RAY_ASYNC_QUEUE_MAX_CALLBACK_ATTEMPTS" doc:"webhook tries"`
	CallbackAllowPrivateNetwork bool     `env:"RAY_ASYNC_QUEUE_CALLBACK_ALLOW_PRIVATE_NETWORK" doc:"allow webhooks to private addresses"`
	CallbackAllowedHosts        []string `env:"RAY_ASYNC_QUEUE_CALLBACK_ALLOWED_HOSTS" doc:"webhook host allow-list (*.suffix allowed)"`
}

// Auth is client API-key authentication.
type Auth struct {
	Enabled   bool     `env:"RAY_AUTH_ENABLED" doc:"require Authorization: Bearer <key>"`
	APIKeyEnv string   `env:"RAY_AUTH_API_KEY_ENV" doc:"variable holding comma-separated client keys"`
	APIKeys   []string `env:"RAY_API_KEYS" doc:"comma-separated client keys (default key variable)" secret:"true"`
}

// Admin is control-plane authentication.
type Admin struct {
	APIKeyEnv string   `env:"RAY_ADMIN_API_KEY_ENV" doc:"variable holding comma-separated admin keys"`
	APIKeys   []string `env:"RAY_ADMIN_API_KEYS" doc:"comma-separated admin keys (default admin key variable)" secret:"true"`
}

// RateLimit is the per-client request limiter.
type RateLimit struct {
	Enabled           bool   `env:"RAY_RATE_LIMIT_ENABLED" doc:"limit requests per client"`
	WindowMS          int    `env:"RAY_RATE_LIMIT_WINDOW_MS" doc:"window length"`
	MaxRequests       int    `env:"RAY_RATE_LIMIT_MAX_REQUESTS" doc:"requests per window"`
	MaxKeys           int    `env:"RAY_RATE_LIMIT_MAX_KEYS" doc:"clients tracked at once"`
	KeyStrategy       string `env:"RAY_RATE_LIMIT_KEY_STRATEGY" doc:"ip, api-key or ip+api-key"`
	TrustProxyHeaders bool   `env:"RAY_RATE_LIMIT_TRUST_PROXY_HEADERS" doc:"take the client IP from X-Forwarded-For/Forwarded sent by a loopback proxy"`
}

// Deploy holds VPS deployment settings used by render, doctor and stage.
type Deploy struct {
	ServiceUser          string `env:"RAY_DEPLOY_SERVICE_USER" doc:"account the services run as (name or UID)"`
	MemoryMiB            int    `env:"RAY_DEPLOY_MEMORY_MIB" doc:"memory the services may use (0: model memory class)"`
	MinFreeStorageMiB    int    `env:"RAY_DEPLOY_MIN_FREE_STORAGE_MIB" doc:"free space every checked volume must keep"`
	ReadyTimeoutSeconds  int    `env:"RAY_DEPLOY_READY_TIMEOUT_SECONDS" doc:"how long to wait for the engine to be ready"`
	GatewayRuntimeBinary string `env:"RAY_GATEWAY_RUNTIME_BINARY" doc:"the gateway executable the units run (default: this raygw)"`
	CaddyBinary          string `env:"RAY_DEPLOY_CADDY_BINARY" doc:"caddy executable"`
	PublicSite           string `env:"RAY_DEPLOY_PUBLIC_SITE" doc:"public site address in the Caddyfile"`
}

// Duration converts a millisecond setting to a time.Duration.
func Duration(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }

// ListenAddr is the gateway's host:port.
func (c *Config) ListenAddr() string { return joinHostPort(c.Host, c.Port) }

// LlamaAddr is llama-server's host:port.
func (c *Config) LlamaAddr() string { return joinHostPort(c.LlamaCpp.Host, c.LlamaCpp.Port) }

func joinHostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
