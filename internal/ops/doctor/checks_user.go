package doctor

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/raygw/raygw/internal/ops/hostfs"
)

func checkServiceUser(e *Env) Result {
	name := e.Config.Deploy.ServiceUser
	u, err := e.user()
	if errors.Is(err, hostfs.ErrNoUser) {
		if isNumeric(name) {
			return fail("create the account first; numeric UIDs must already resolve", "RAY_DEPLOY_SERVICE_USER=%s: no account has this UID", name)
		}
		return fail(fmt.Sprintf("sudo useradd --system --home-dir /var/lib/ray --shell /usr/sbin/nologin %s", name),
			"RAY_DEPLOY_SERVICE_USER=%s: no such account", name)
	}
	if err != nil {
		return fail("", "%v", err)
	}
	if u.UID == 0 {
		return fail("create an unprivileged account", "RAY_DEPLOY_SERVICE_USER=%s is root: the services would run with full privileges", name)
	}
	return ok("service user %s (uid %d, gid %d)", u.Name, u.UID, u.GID)
}

// checkUserAccess evaluates, from the host tree's owners and modes, whether
// the service user can reach every file the units use.
func checkUserAccess(e *Env) Result {
	u, err := e.user()
	if err != nil {
		return fail("create the service user first", "cannot check access: %v", err)
	}
	type need struct {
		label string
		p     string
		a     hostfs.Access
	}
	needs := []need{
		{"raygw binary", e.gatewayBinary(), hostfs.Exec},
		{"llama-server", e.Config.LlamaCpp.BinaryPath, hostfs.Exec},
		{"model", e.modelPath(), hostfs.Read},
	}
	if e.ConfigFile != "" {
		needs = append(needs, need{"config file", e.ConfigFile, hostfs.Read})
	}
	for _, d := range stateDirs(e) {
		needs = append(needs, need{"state directory", d, hostfs.Write | hostfs.Exec})
	}
	var problems, okd []string
	for _, n := range needs {
		if n.a&hostfs.Write != 0 && !e.Host.Exists(n.p) && under(n.p, "/var/lib") != "" {
			okd = append(okd, n.p+" (created by StateDirectory=)")
			continue
		}
		if err := e.Host.CanAccess(u, n.p, n.a); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", n.label, err))
			continue
		}
		okd = append(okd, n.p)
	}
	if len(problems) > 0 {
		return fail(fmt.Sprintf("give %s access (chown/chmod), or stage the files with raygw stage --apply", u.Name),
			"%s", strings.Join(problems, "; "))
	}
	return ok("%s can use %s; the env file reaches it as a systemd credential", u.Name, strings.Join(okd, ", "))
}

func stateDirs(e *Env) []string {
	dirs := []string{e.Config.StateDir}
	if e.Config.AsyncQueue.Enabled && e.Config.AsyncQueue.StorageDir != "" {
		dirs = append(dirs, e.Config.AsyncQueue.StorageDir)
	}
	return dirs
}

// checkWorkingDir checks the gateway's WorkingDirectory (RAY_STATE_DIR) and the
// install directory of the raygw binary for access and free space.
func checkWorkingDir(e *Env) Result {
	wd := e.Config.StateDir
	if !path.IsAbs(wd) {
		return fail("set RAY_STATE_DIR to an absolute path", "RAY_STATE_DIR=%q is not absolute", wd)
	}
	if !e.Host.Exists(wd) && under(wd, "/var/lib") == "" {
		return fail(fmt.Sprintf("sudo install -d -o %s -m 0750 %s", e.Config.Deploy.ServiceUser, wd),
			"WorkingDirectory %s does not exist and is outside /var/lib, so systemd will not create it", wd)
	}
	min := e.Config.Deploy.MinFreeStorageMiB
	r := e.headroom("WorkingDirectory", wd, min)
	if r.Status != OK {
		return r
	}
	r2 := e.headroom("install dir", path.Dir(e.gatewayBinary()), min)
	if r2.Status != OK {
		return r2
	}
	return ok("%s; %s", r.Message, r2.Message)
}

func isNumeric(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
