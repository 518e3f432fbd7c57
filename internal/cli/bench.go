package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	benchfiles "github.com/raygw/raygw/bench"
	"github.com/raygw/raygw/internal/bench"
	"github.com/raygw/raygw/internal/bench/report"
	"github.com/raygw/raygw/internal/bench/upstream"
	"github.com/raygw/raygw/internal/bench/workload"
)

func init() { register(newBenchCmd) }

// benchFlags are the flags shared by `raygw bench` and `raygw bench assert`.
type benchFlags struct {
	url, apiKey, model      string
	compare, compareKey     string
	compareModel            string
	workload                string
	concurrency, repeat     int
	rate                    float64
	arrivals, noProgress    bool
	noStream                bool
	out                     string
	timeout                 time.Duration
	keepOutput, maxInFlight int
	thresholds              string
}

func (f *benchFlags) register(cmd *cobra.Command, assert bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "", "base URL of the server under test (default: http://RAY_HOST:RAY_PORT)")
	fl.StringVar(&f.apiKey, "api-key", "", "Bearer key (default: $RAY_BENCH_API_KEY, else the first gateway client key)")
	fl.StringVar(&f.model, "model", "", `"model" sent in every request (default: RAY_MODEL_ID)`)
	fl.DurationVar(&f.timeout, "timeout", 2*time.Minute, "limit for one request")
	fl.BoolVar(&f.noProgress, "no-progress", false, "do not draw the progress bar")
	fl.IntVar(&f.keepOutput, "keep-output", 512, "bytes of each response kept in the report (negative: none)")
	if assert {
		fl.StringVar(&f.thresholds, "thresholds", "", "threshold file (default: the checked-in bench/thresholds/<profile>.json)")
		fl.StringVar(&f.workload, "workload", "", "workload JSONL (default: the one the threshold file names)")
		fl.StringVar(&f.out, "out", "", "also write the JSON report (and an .svg chart) here")
		return
	}
	fl.StringVar(&f.workload, "workload", "", "workload JSONL, one request per line (default: the checked-in email-1b.jsonl)")
	fl.StringVar(&f.out, "out", "bench-report.json", "JSON report path; the SVG chart is written beside it")
	fl.StringVar(&f.compare, "compare", "", "second base URL; requests alternate between --url and this one")
	fl.StringVar(&f.compareKey, "compare-api-key", "", "Bearer key for --compare (default: --api-key)")
	fl.StringVar(&f.compareModel, "compare-model", "", "model for --compare (default: --model)")
	fl.IntVar(&f.concurrency, "concurrency", 1, "requests in flight (closed loop)")
	fl.Float64Var(&f.rate, "rate", 0, "open loop: send this many requests per second instead")
	fl.BoolVar(&f.arrivals, "arrivals", false, "open loop: send each request at its arrival_ms")
	fl.IntVar(&f.repeat, "repeat", 1, "replay the workload this many times")
	fl.IntVar(&f.maxInFlight, "max-in-flight", 1024, "open loop: most requests in flight at once")
	fl.BoolVar(&f.noStream, "no-stream", false, "send non-streaming requests (TTFT then equals end-to-end latency)")
}

// resolve fills URL, key and model defaults from the configuration.
func (f *benchFlags) resolve(g *Globals) error {
	if f.apiKey == "" {
		f.apiKey = os.Getenv("RAY_BENCH_API_KEY")
	}
	if f.url != "" && f.model != "" {
		return nil
	}
	cfg, err := g.Load(nil)
	if err != nil {
		return fmt.Errorf("--url and --model not given and the configuration does not load: %w", err)
	}
	if f.url == "" {
		f.url = "http://" + cfg.ListenAddr()
	}
	if f.model == "" {
		f.model = cfg.Model.ID
	}
	if f.apiKey == "" && cfg.Auth.Enabled && len(cfg.Auth.APIKeys) > 0 {
		f.apiKey = cfg.Auth.APIKeys[0]
	}
	return nil
}

func newBenchCmd(g *Globals) *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Replay a JSONL workload against an OpenAI-compatible server and report latency, throughput and quality",
		Long: `raygw bench sends every line of a JSONL workload as a streaming request and measures
time to first token, queue delay (X-Ray-Queue-Ms), end-to-end latency, completion tokens/s,
prompt tokens evaluated vs reused (llama-server timings), quality checks and errors.
It writes a JSON report (--out) and an SVG latency chart beside it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.resolve(g); err != nil {
				return err
			}
			opts, err := f.options()
			if err != nil {
				return err
			}
			_, err = runAndReport(cmd.Context(), opts, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
			return err
		},
	}
	f.register(cmd, false)
	cmd.AddCommand(newBenchAssertCmd(g), newBenchUpstreamCmd(), newBenchAutotuneCmd(g))
	return cmd
}

// options turns the flags into runner options.
func (f *benchFlags) options() (bench.Options, error) {
	items, name, err := loadWorkload(f.workload, "email-1b.jsonl")
	if err != nil {
		return bench.Options{}, err
	}
	o := bench.Options{Items: items, WorkloadName: name, Concurrency: f.concurrency, Repeat: f.repeat,
		Timeout: f.timeout, KeepOutput: f.keepOutput, MaxInFlight: f.maxInFlight, NoStream: f.noStream,
		Targets: []bench.Target{{Label: "a", URL: f.url, APIKey: f.apiKey, Model: f.model}}}
	switch {
	case f.rate > 0 && f.arrivals:
		return o, &ExitError{Code: 2, Err: errors.New("--rate and --arrivals are mutually exclusive")}
	case f.rate > 0:
		o.Schedule, o.Rate = bench.Rate, f.rate
	case f.arrivals:
		o.Schedule = bench.Arrivals
	default:
		o.Schedule = bench.Closed
	}
	if f.compare != "" {
		key, model := f.compareKey, f.compareModel
		if key == "" {
			key = f.apiKey
		}
		if model == "" {
			model = f.model
		}
		o.Targets = append(o.Targets, bench.Target{Label: "b", URL: f.compare, APIKey: key, Model: model})
	}
	return o, nil
}

// loadWorkload reads path, or the checked-in workload def when path is "".
func loadWorkload(path, def string) ([]workload.Item, string, error) {
	var b []byte
	var err error
	name := path
	if path == "" {
		name = "bench/workloads/" + def
		b, err = benchfiles.Workload(def)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, "", err
	}
	items, err := workload.Parse(bytes.NewReader(b))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	return items, name, nil
}

// runAndReport runs the benchmark with a progress bar, prints the table and
// writes the JSON report and SVG chart when f.out is set.
func runAndReport(ctx context.Context, o bench.Options, f *benchFlags, stdout, stderr io.Writer) (*report.Report, error) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	finish := func() {}
	if !f.noProgress {
		bar := progressbar.NewOptions(bench.Plan(o), progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("bench"), progressbar.OptionShowCount(), progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("req"), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish())
		o.OnDone = func(report.Row) { _ = bar.Add(1) }
		finish = func() { _ = bar.Finish() }
	}
	rep, err := bench.Run(ctx, o)
	finish()
	if rep == nil {
		return nil, err
	}
	if err != nil {
		fmt.Fprintf(stderr, "raygw bench: stopped early (%v); reporting %d finished requests\n", err, len(rep.Rows))
	}
	if werr := rep.WriteTable(stdout); werr != nil {
		return rep, werr
	}
	if f.out != "" {
		if werr := rep.WriteJSON(f.out); werr != nil {
			return rep, werr
		}
		svg := strings.TrimSuffix(f.out, ".json") + ".svg"
		if werr := rep.WriteSVGFile(svg); werr != nil {
			return rep, werr
		}
		fmt.Fprintf(stdout, "report: %s\nchart:  %s\n", f.out, svg)
	}
	return rep, err
}

func newBenchAssertCmd(g *Globals) *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "assert",
		Short: "Run the profile's checked-in workload and fail when a threshold is missed",
		Long: `raygw bench assert runs the starter workload of a profile (--profile 1b or 1b-8gb) and
compares TTFT p95, completion tokens/s p50, quality pass rate and error rate with the
profile's threshold file (bench/thresholds/<profile>.json). It exits 3 when a threshold
is missed, naming the metric, the threshold and the measured value.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			th, err := loadThresholds(g.Profile, f.thresholds)
			if err != nil {
				return err
			}
			if err := f.resolve(g); err != nil {
				return err
			}
			items, name, err := loadWorkload(f.workload, th.Workload)
			if err != nil {
				return err
			}
			o := bench.Options{Items: items, WorkloadName: name, Schedule: bench.Closed, Concurrency: th.Concurrency,
				Repeat: th.Repeat, Timeout: f.timeout, KeepOutput: f.keepOutput,
				Targets: []bench.Target{{Label: th.Profile, URL: f.url, APIKey: f.apiKey, Model: f.model}}}
			rep, err := runAndReport(cmd.Context(), o, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if err := th.Assert(rep.Summaries[0]); err != nil {
				return &ExitError{Code: 3, Err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "profile %s: all thresholds met\n", th.Profile)
			return nil
		},
	}
	f.register(cmd, true)
	return cmd
}

func loadThresholds(profile, path string) (*report.Thresholds, error) {
	var b []byte
	var err error
	if path != "" {
		b, err = os.ReadFile(path)
	} else {
		if profile == "" {
			profile = "1b"
		}
		b, err = benchfiles.Thresholds(profile)
	}
	if err != nil {
		return nil, err
	}
	return report.ParseThresholds(b)
}

func newBenchUpstreamCmd() *cobra.Command {
	var addr string
	var o upstream.Options
	cmd := &cobra.Command{
		Use:   "upstream",
		Short: "Serve a fixed-latency OpenAI-compatible fake engine (no model) for overhead and capacity tests",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			srv := &http.Server{Handler: upstream.New(o), ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(cmd.OutOrStdout(), "raygw bench upstream listening on http://%s (latency %s)\n", ln.Addr(), o.Latency)
			go func() {
				<-ctx.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(sctx)
			}()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&addr, "addr", "127.0.0.1:8090", "listen address")
	fl.DurationVar(&o.Latency, "latency", time.Millisecond, "wait before the first byte of each completion")
	fl.DurationVar(&o.TokenInterval, "token-interval", 0, "wait between streamed tokens")
	fl.IntVar(&o.Tokens, "tokens", 16, "completion tokens when a request sets no max_tokens")
	fl.StringVar(&o.Model, "model", "bench-upstream", "model id it reports")
	return cmd
}
