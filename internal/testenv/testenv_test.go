package testenv

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestStartLlamaServerServesTheModel(t *testing.T) {
	e := StartLlamaServer(t)
	resp, err := http.Post(e.URL+"/completion", "application/json",
		strings.NewReader(`{"prompt":"Once upon a time","n_predict":8}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"tokens_predicted":8`) {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
}
