package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// propsClient reads /props on connections of its own, closed at once, so a
// short call never holds one of llama-server's HTTP threads.
var propsClient = &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// readContext records, in the background, the per-slot context size a
// llama.cpp replica that just became healthy reports in /props; the data
// path's length check never allows more than the engine has.
func (d *deployment) readContext(id, address string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		n, err := perSlotContext(ctx, address)
		if err != nil || n <= 0 {
			d.log.Debug("replica context size unknown", "replica", id, "err", err)
			return
		}
		d.nctx.Store(id, n)
		d.log.Info("replica context", "replica", id, "per_slot_ctx", n)
	}()
}

// perSlotContext asks a llama-server for its per-slot context (n_ctx).
func perSlotContext(ctx context.Context, address string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, address+"/props", nil)
	if err != nil {
		return 0, err
	}
	resp, err := propsClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("/props answered %d", resp.StatusCode)
	}
	var props struct {
		Default struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&props); err != nil {
		return 0, err
	}
	return props.Default.NCtx, nil
}
