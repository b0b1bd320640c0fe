package lambdaapi

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// codeDeployTargetPrefix is the X-Amz-Target prefix of CodeDeploy's
// operations (JSON 1.1).
const codeDeployTargetPrefix = "CodeDeploy_20141006."

// HookStatus is a lifecycle hook status reported with
// PutLifecycleEventHookExecutionStatus.
type HookStatus struct {
	DeploymentID                  string
	LifecycleEventHookExecutionID string
	// Status is Succeeded or Failed, the statuses CodeDeploy accepts.
	Status string
	At     time.Time
}

// CodeDeploy serves CodeDeploy's PutLifecycleEventHookExecutionStatus and
// records the statuses reported, for the deployments CreateDeployment
// started (another id is DeploymentDoesNotExistException); a hook
// execution takes one status, as CodeDeploy's does: a second report of
// the same execution id is refused (LifecycleEventAlreadyCompletedException).
// It is safe for concurrent use.
type CodeDeploy struct {
	authorize func(r *http.Request, deploymentID string) error
	log       *slog.Logger

	mu          sync.Mutex
	statuses    []HookStatus
	deployments map[string]Deployment
}

// Deployment is a deployment of a deployment group of an application.
type Deployment struct {
	ID, Application, Group string
}

// CreateDeployment records a deployment of application's group, as
// CodeDeploy's CreateDeployment would start one, and returns it: its
// lifecycle hooks report their status under its ID.
func (c *CodeDeploy) CreateDeployment(application, group string) Deployment {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deployments == nil {
		c.deployments = map[string]Deployment{}
	}
	d := Deployment{ID: fmt.Sprintf("d-LOCAL%05d", len(c.deployments)+1), Application: application, Group: group}
	c.deployments[d.ID] = d
	return d
}

// Deployment returns the deployment id names.
func (c *CodeDeploy) Deployment(id string) (Deployment, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.deployments[id]
	return d, ok
}

// Statuses returns the statuses reported so far, in order.
func (c *CodeDeploy) Statuses() []HookStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]HookStatus(nil), c.statuses...)
}

// Status returns the status reported for a lifecycle hook execution.
func (c *CodeDeploy) Status(executionID string) (HookStatus, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.statuses {
		if s.LifecycleEventHookExecutionID == executionID {
			return s, true
		}
	}
	return HookStatus{}, false
}

// putHookStatusInput is PutLifecycleEventHookExecutionStatus's request.
type putHookStatusInput struct {
	DeploymentID                  string `json:"deploymentId"`
	LifecycleEventHookExecutionID string `json:"lifecycleEventHookExecutionId"`
	Status                        string `json:"status"`
}

// serve answers one JSON 1.1 request of X-Amz-Target target.
func (c *CodeDeploy) serve(w http.ResponseWriter, r *http.Request, target string) {
	op, ok := strings.CutPrefix(target, codeDeployTargetPrefix)
	switch {
	case !ok || r.Method != http.MethodPost:
		jsonError(w, "UnknownOperationException", fmt.Sprintf("%s %s with X-Amz-Target %q is not served locally", r.Method, r.URL.Path, target))
		return
	case op != "PutLifecycleEventHookExecutionStatus":
		jsonError(w, "UnknownOperationException", fmt.Sprintf("CodeDeploy operation %s is not served locally (PutLifecycleEventHookExecutionStatus only)", op))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		jsonError(w, "SerializationException", "cannot read the request: "+err.Error())
		return
	}
	var in putHookStatusInput
	if err := json.Unmarshal(body, &in); err != nil {
		jsonError(w, "SerializationException", "the request is not a JSON object: "+err.Error())
		return
	}
	if in.DeploymentID != "" {
		if _, ok := c.Deployment(in.DeploymentID); !ok {
			jsonError(w, "DeploymentDoesNotExistException", fmt.Sprintf("The deployment %s could not be found.", in.DeploymentID))
			return
		}
	}
	if c.authorize != nil {
		if err := c.authorize(r, in.DeploymentID); err != nil {
			c.log.WarnContext(r.Context(), "hook status refused", "deploymentId", in.DeploymentID, "error", err)
			jsonError(w, "AccessDeniedException", err.Error())
			return
		}
	}
	switch {
	case in.DeploymentID == "":
		jsonError(w, "DeploymentIdRequiredException", "At least one deployment ID must be specified.")
		return
	case in.LifecycleEventHookExecutionID == "":
		jsonError(w, "InvalidLifecycleEventHookExecutionIdException", "A lifecycle event hook execution ID must be specified.")
		return
	case in.Status != "Succeeded" && in.Status != "Failed":
		jsonError(w, "InvalidLifecycleEventHookExecutionStatusException",
			fmt.Sprintf("The lifecycle event hook execution status %q is not valid: Succeeded or Failed.", in.Status))
		return
	}
	c.mu.Lock()
	for _, s := range c.statuses {
		if s.LifecycleEventHookExecutionID == in.LifecycleEventHookExecutionID {
			c.mu.Unlock()
			jsonError(w, "LifecycleEventAlreadyCompletedException",
				fmt.Sprintf("The lifecycle event hook execution %s already has status %s.", s.LifecycleEventHookExecutionID, s.Status))
			return
		}
	}
	c.statuses = append(c.statuses, HookStatus{DeploymentID: in.DeploymentID, LifecycleEventHookExecutionID: in.LifecycleEventHookExecutionID,
		Status: in.Status, At: time.Now()})
	c.mu.Unlock()
	c.log.InfoContext(r.Context(), "lifecycle hook status", "deploymentId", in.DeploymentID,
		"lifecycleEventHookExecutionId", in.LifecycleEventHookExecutionID, "status", in.Status)
	out, _ := json.Marshal(map[string]string{"lifecycleEventHookExecutionId": in.LifecycleEventHookExecutionID})
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// jsonError writes an error of a JSON 1.1 service: HTTP 400 with the
// error's name in __type.
func jsonError(w http.ResponseWriter, code, message string) {
	b, _ := json.Marshal(map[string]string{"__type": code, "message": message})
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(b)
}
