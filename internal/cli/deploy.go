package cli

// deploy.go is the `raygw deploy` command group, a client of the control
// plane's REST API (/api/v1/deployments, admin key).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/raygw/raygw/internal/deploy"
	"github.com/raygw/raygw/internal/engine/vllm"
)

func init() { register(newDeployCmd) }

// deployClient talks to the control plane.
type deployClient struct {
	url, key string
	out      io.Writer
	http     *http.Client
}

func newDeployCmd(g *Globals) *cobra.Command {
	c := &deployClient{http: &http.Client{Timeout: 30 * time.Second}}
	var keyEnv string
	cmd := &cobra.Command{
		Use:   "deploy",
		Short: "Manage model deployments (replicas behind one endpoint) through the control-plane API",
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			c.out = cmd.OutOrStdout()
			if c.key == "" {
				c.key = os.Getenv(keyEnv)
			}
			if c.url == "" {
				cfg, err := g.Load(nil)
				if err != nil {
					return err
				}
				host := cfg.Host
				if host == "" || host == "0.0.0.0" || host == "::" {
					host = "127.0.0.1"
				}
				c.url = "http://" + joinHost(host, cfg.Port)
				if c.key == "" && len(cfg.Admin.APIKeys) > 0 {
					c.key = cfg.Admin.APIKeys[0]
				}
			}
			c.url = strings.TrimRight(c.url, "/")
			return nil
		},
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&c.url, "url", "", "gateway base URL (default: http://RAY_HOST:RAY_PORT)")
	pf.StringVar(&c.key, "admin-key", "", "admin API key (default: $RAYGW_ADMIN_KEY, then the first of RAY_ADMIN_API_KEYS)")
	pf.StringVar(&keyEnv, "admin-key-env", "RAYGW_ADMIN_KEY", "variable holding the admin API key")
	cmd.AddCommand(c.createCmd(), c.listCmd(), c.getCmd(), c.scaleCmd(), c.updateCmd(), c.deleteCmd())
	return cmd
}

func joinHost(host string, port int) string {
	if strings.Contains(host, ":") {
		return fmt.Sprintf("[%s]:%d", host, port)
	}
	return fmt.Sprintf("%s:%d", host, port)
}

// call sends one API request and returns the body of a 2xx answer; other
// answers become errors carrying the API's message (exit code 2).
func (c *deployClient) call(method, path string, body []byte) ([]byte, error) {
	req, err := http.NewRequest(method, c.url+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("control plane at %s: %w", c.url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode/100 != 2 {
		var env struct {
			Error struct {
				Message string  `json:"message"`
				Param   *string `json:"param"`
			} `json:"error"`
		}
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &env) == nil && env.Error.Message != "" {
			msg = env.Error.Message
		}
		return nil, &ExitError{Code: 2, Err: fmt.Errorf("%s %s: %d: %s", method, path, resp.StatusCode, msg)}
	}
	return b, nil
}

// show calls the API and prints its JSON answer.
func (c *deployClient) show(method, path string, body []byte) error {
	out, err := c.call(method, path, body)
	if err != nil {
		return err
	}
	return c.printJSON(out)
}

func (c *deployClient) printJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		_, err = c.out.Write(b)
		return err
	}
	return writeJSON(c.out, v)
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (c *deployClient) createCmd() *cobra.Command {
	var file string
	var s deploy.Spec
	var loraPairs []string
	cmd := &cobra.Command{
		Use:   "create [NAME]",
		Short: "Create a deployment from flags or a JSON spec file (-f)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			var body []byte
			if file != "" {
				var err error
				if body, err = readSpecFile(file); err != nil {
					return err
				}
			} else {
				if len(args) == 1 {
					s.Name = args[0]
				}
				for _, p := range loraPairs {
					name, path, ok := strings.Cut(p, "=")
					if !ok {
						return fmt.Errorf("--lora %q: want NAME=PATH", p)
					}
					s.EngineConfig.LoRAModules = append(s.EngineConfig.LoRAModules, vllm.LoRAModule{Name: name, Path: path})
				}
				body, _ = json.Marshal(s)
			}
			return c.show(http.MethodPost, "/api/v1/deployments", body)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "JSON spec file ('-' reads stdin); flags are ignored with it")
	f.StringVar(&s.Cluster, "cluster", "", "runtime (default local)")
	f.StringVar(&s.ModelName, "model-name", "", "model name clients send as \"model\"")
	f.StringVar(&s.ModelPath, "model-path", "", "GGUF file (llama.cpp) or model directory (vllm)")
	f.StringVar(&s.ModelClass, "model-class", "", "llama.cpp (default), vllm or openai")
	f.IntVar(&s.Replicas, "replicas", 0, "replicas (default 1)")
	f.IntVar(&s.GPUsPerReplica, "gpus-per-replica", 0, "GPUs per replica")
	f.IntVar(&s.CPUsPerReplica, "cpus-per-replica", 0, "CPUs per replica (pinned; also the thread count)")
	f.StringVar(&s.EngineConfig.BaseURL, "base-url", "", "external endpoint (model class openai)")
	f.StringArrayVar(&loraPairs, "lora", nil, "LoRA adapter NAME=PATH (repeatable)")
	return cmd
}

func (c *deployClient) listCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List deployments",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			out, err := c.call(http.MethodGet, "/api/v1/deployments", nil)
			if err != nil || asJSON {
				if err == nil {
					err = c.printJSON(out)
				}
				return err
			}
			var list struct {
				Deployments []deploy.Status `json:"deployments"`
			}
			if err := json.Unmarshal(out, &list); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tMODEL\tCLASS\tSTATUS\tREPLICAS\tENDPOINT\tSOURCE")
			for _, d := range list.Deployments {
				healthy := 0
				for _, r := range d.ReplicasStatus {
					if r.Status == deploy.ReplicaHealthy && !r.Draining {
						healthy++
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", d.Name, d.ModelName, d.ModelClass, d.Status, healthy, d.Replicas,
					d.Endpoint, d.Source)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	return cmd
}

func (c *deployClient) getCmd() *cobra.Command {
	var metrics bool
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show one deployment's spec, state and replicas (or --metrics)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			path := "/api/v1/deployments/" + args[0]
			if metrics {
				path += "/metrics"
			}
			return c.show(http.MethodGet, path, nil)
		},
	}
	cmd.Flags().BoolVar(&metrics, "metrics", false, "show requests/s, latency percentiles and error rates")
	return cmd
}

func (c *deployClient) scaleCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "scale NAME REPLICAS",
		Short: "Change the number of replicas",
		Args:  cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			var n int
			if _, err := fmt.Sscanf(args[1], "%d", &n); err != nil || n < 1 {
				return fmt.Errorf("REPLICAS %q: want a positive integer", args[1])
			}
			body, _ := json.Marshal(map[string]int{"replicas": n})
			return c.show(http.MethodPatch, "/api/v1/deployments/"+args[0], body)
		},
	}
}

func (c *deployClient) updateCmd() *cobra.Command {
	var file, modelPath string
	var replicas int
	cmd := &cobra.Command{
		Use:   "update NAME",
		Short: "Change a deployment (rolling update): --model-path, --replicas, or a JSON patch file (-f)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			patch := map[string]any{}
			if file != "" {
				b, err := readSpecFile(file)
				if err != nil {
					return err
				}
				if err := json.Unmarshal(b, &patch); err != nil {
					return fmt.Errorf("%s: %w", file, err)
				}
			}
			if modelPath != "" {
				patch["model_path"] = modelPath
			}
			if replicas > 0 {
				patch["replicas"] = replicas
			}
			if len(patch) == 0 {
				return fmt.Errorf("nothing to update: give -f, --model-path or --replicas")
			}
			body, _ := json.Marshal(patch)
			return c.show(http.MethodPatch, "/api/v1/deployments/"+args[0], body)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "JSON object of spec fields to change ('-' reads stdin)")
	cmd.Flags().StringVar(&modelPath, "model-path", "", "new model path")
	cmd.Flags().IntVar(&replicas, "replicas", 0, "new replica count")
	return cmd
}

func (c *deployClient) deleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a deployment (in-flight requests finish first, up to its drain timeout)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return c.show(http.MethodDelete, "/api/v1/deployments/"+args[0], nil)
		},
	}
}

func readSpecFile(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("spec file: %w", err)
	}
	return b, nil
}
