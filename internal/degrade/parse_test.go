package degrade

import (
	"errors"
	"testing"
)

func TestParsePSI(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want PSI
		err  error
	}{
		{"some and full", "some avg10=1.50 avg60=0.00 avg300=0.00 total=12\nfull avg10=0.25 avg60=0.00 avg300=0.00 total=3\n",
			PSI{SomeAvg10: 1.5, FullAvg10: 0.25, HasFull: true}, nil},
		{"some only (old cpu file)", "some avg10=39.85 avg60=58.93 avg300=41.49 total=1980314568\n",
			PSI{SomeAvg10: 39.85}, nil},
		{"no trailing newline", "some avg10=100.00 avg60=0 avg300=0 total=0", PSI{SomeAvg10: 100}, nil},
		{"unknown lines ignored", "other x=1\nsome avg10=2 total=0\n", PSI{SomeAvg10: 2}, nil},
		{"empty", "", PSI{}, ErrMalformed},
		{"full only", "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", PSI{}, ErrMalformed},
		{"no avg10", "some avg60=1.00 total=0\n", PSI{}, ErrMalformed},
		{"garbage value", "some avg10=abc avg60=0 total=0\n", PSI{}, ErrMalformed},
		{"negative", "some avg10=-1 total=0\n", PSI{}, ErrMalformed},
		{"over 100", "some avg10=100.01 total=0\n", PSI{}, ErrMalformed},
		{"NaN", "some avg10=NaN total=0\n", PSI{}, ErrMalformed},
		{"Inf", "some avg10=+Inf total=0\n", PSI{}, ErrMalformed},
		{"binary", "\x00\xff\xfe", PSI{}, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePSI([]byte(tt.in))
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseCPUStat(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want CPUStat
		err  error
	}{
		{"v2 with controller", "usage_usec 100\nuser_usec 60\nsystem_usec 40\nnr_periods 200\nnr_throttled 50\nthrottled_usec 9\n",
			CPUStat{Periods: 200, Throttled: 50}, nil},
		{"no cpu controller", "usage_usec 100\nuser_usec 60\nsystem_usec 40\n", CPUStat{}, ErrMissingKey},
		{"throttled missing", "nr_periods 3\n", CPUStat{}, ErrMissingKey},
		{"garbage number", "nr_periods x\nnr_throttled 1\n", CPUStat{}, ErrMalformed},
		{"negative", "nr_periods -3\nnr_throttled 1\n", CPUStat{}, ErrMalformed},
		{"throttled > periods", "nr_periods 1\nnr_throttled 2\n", CPUStat{}, ErrMalformed},
		{"prefix key not confused", "nr_periods_x 9\nnr_periods 4\nnr_throttled 0\n", CPUStat{Periods: 4}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCPUStat([]byte(tt.in))
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseMemoryMax(t *testing.T) {
	tests := []struct {
		in        string
		limit     uint64
		unlimited bool
		err       error
	}{
		{"max\n", 0, true, nil},
		{"4294967296\n", 4294967296, false, nil},
		{"0", 0, false, nil},
		{"", 0, false, ErrMalformed},
		{"-1\n", 0, false, ErrMalformed},
		{"4G\n", 0, false, ErrMalformed},
		{"99999999999999999999999\n", 0, false, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			limit, unlimited, err := parseMemoryMax([]byte(tt.in))
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if limit != tt.limit || unlimited != tt.unlimited {
				t.Fatalf("got (%d, %v), want (%d, %v)", limit, unlimited, tt.limit, tt.unlimited)
			}
		})
	}
}

func TestParseProcCgroup(t *testing.T) {
	tests := []struct {
		name, in, want string
		err            error
	}{
		{"unified", "0::/system.slice/raygw.service\n", "system.slice/raygw.service", nil},
		{"root", "0::/\n", "", nil},
		{"hybrid", "4:memory:/x\n1:cpu:/\n0::/user.slice\n", "user.slice", nil},
		{"v1 only", "4:memory:/x\n1:cpu,cpuacct:/\n", "", ErrNoCgroupV2},
		{"empty", "", "", ErrNoCgroupV2},
		{"deleted group", "0::/gone (deleted)\n", "gone", nil},
		{"relative", "0::system.slice\n", "", ErrMalformed},
		{"dotdot", "0::/a/../../etc\n", "", ErrMalformed},
		{"double slash cleaned", "0::/a//b/\n", "a/b", nil},
		{"crlf", "0::/a\r\n", "a", nil},
		{"invalid utf-8 (fuzz)", "0::/\xba\n", "", ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcCgroup([]byte(tt.in))
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseVmRSS(t *testing.T) {
	tests := []struct {
		name, in string
		want     uint64
		err      error
	}{
		{"status", "Name:\traygw\nVmPeak:\t  10 kB\nVmRSS:\t    2012 kB\nThreads:\t1\n", 2012 * 1024, nil},
		{"missing (kernel thread)", "Name:\tkthreadd\nThreads:\t1\n", 0, ErrMissingKey},
		{"bad unit", "VmRSS:\t 2012 MB\n", 0, ErrMalformed},
		{"no unit", "VmRSS:\t 2012\n", 0, ErrMalformed},
		{"garbage", "VmRSS:\t x kB\n", 0, ErrMalformed},
		{"overflow", "VmRSS:\t 18446744073709551615 kB\n", 0, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseVmRSS([]byte(tt.in))
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if got != tt.want {
				t.Fatalf("got %d, want %d", got, tt.want)
			}
		})
	}
}
