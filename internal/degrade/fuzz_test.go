package degrade

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"testing"
)

// Seeds beyond f.Add live in testdata/fuzz/<FuzzName>/.

func FuzzParsePSI(f *testing.F) {
	f.Add([]byte("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"))
	f.Add([]byte("some avg10=39.85 avg60=58.93 avg300=41.49 total=1980314568\n"))
	f.Add([]byte("full avg10=1e2\nsome avg10=0x1p-2"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parsePSI(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if p.SomeAvg10 < 0 || p.SomeAvg10 > 100 || p.FullAvg10 < 0 || p.FullAvg10 > 100 {
			t.Fatalf("out of range: %+v", p)
		}
		if !p.HasFull && p.FullAvg10 != 0 {
			t.Fatalf("full value without a full line: %+v", p)
		}
	})
}

func FuzzParseCPUStat(f *testing.F) {
	f.Add([]byte("usage_usec 1\nnr_periods 10\nnr_throttled 3\nthrottled_usec 5\n"))
	f.Add([]byte("usage_usec 1\nuser_usec 1\nsystem_usec 0\n"))
	f.Add([]byte("nr_periods 18446744073709551615\nnr_throttled 18446744073709551615"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseCPUStat(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrMissingKey) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		if st.Throttled > st.Periods {
			t.Fatalf("throttled > periods: %+v", st)
		}
	})
}

func FuzzParseMemoryMax(f *testing.F) {
	for _, s := range []string{"max\n", "4294967296\n", "0", " max ", "-1", "1e9"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		limit, unlimited, err := parseMemoryMax(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) || unlimited || limit != 0 {
				t.Fatalf("error %v with limit %d unlimited %v", err, limit, unlimited)
			}
			return
		}
		if unlimited && limit != 0 {
			t.Fatalf("unlimited with limit %d", limit)
		}
		if !unlimited {
			if n, err := parseBytes(data); err != nil || n != limit {
				t.Fatalf("memory.max %d disagrees with parseBytes %d, %v", limit, n, err)
			}
		}
	})
}

func FuzzParseProcCgroup(f *testing.F) {
	for _, s := range []string{
		"0::/system.slice/raygw.service\n", "12:memory:/x\n0::/\n", "0::/a/../b\n",
		"0::/gone (deleted)\n", "0::relative\n", "0::/a//./b/\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rel, err := parseProcCgroup(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrNoCgroupV2) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		if strings.HasPrefix(rel, "/") || strings.HasSuffix(rel, "/") {
			t.Fatalf("path %q not relative and clean", rel)
		}
		if joined := path.Join("sys/fs/cgroup", rel); !fs.ValidPath(joined) || !strings.HasPrefix(joined, "sys/fs/cgroup") {
			t.Fatalf("path %q escapes or is invalid: %q", rel, joined)
		}
	})
}

func FuzzParseVmRSS(f *testing.F) {
	f.Add([]byte("Name:\traygw\nVmRSS:\t    2012 kB\nThreads:\t1\n"))
	f.Add([]byte("VmRSS: 18014398509481983 kB\n"))
	f.Add([]byte("VmRSS:"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := parseVmRSS(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrMissingKey) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		if b%1024 != 0 {
			t.Fatalf("%d bytes is not whole kB", b)
		}
	})
}
