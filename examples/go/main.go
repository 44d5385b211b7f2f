// examples/go: calling gpusched from Go through cgo and the C API (include/gpusched/c/gpusched.h).
//
//	place CLUSTER.json JOBS.json [POLICY]
//
// Loads the two documents of `gpusched place` (docs/formats.md), builds a second cluster from Go
// values (gpusched_state_from_nodes), places the jobs in file order and prints the bindings or why
// a job waits. ctest builds it with Debian's golang-go (no network: a module without dependencies,
// GOPROXY=off) and compares its output with place.expected. CGO_CFLAGS and CGO_LDFLAGS point at the
// header and at libgpusched_c (tests/CMakeLists.txt, examples/go/run_go.cmake).
package main

/*
#include <stdlib.h>
#include "gpusched/c/gpusched.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"unsafe"
)

// statusError turns a failing call's status and message into a Go error.
func statusError(st C.gpusched_status, e *C.gpusched_error) error {
	if st == C.GPUSCHED_OK {
		return nil
	}
	return fmt.Errorf("%s: %s", C.GoString(C.gpusched_status_name(st)), C.GoString(&e.message[0]))
}

// Cluster owns a gpusched_state.
type Cluster struct{ s *C.gpusched_state }

func LoadCluster(path string) (*Cluster, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var e C.gpusched_error
	var s *C.gpusched_state
	if err := statusError(C.gpusched_state_from_file(cpath, &s, &e), &e); err != nil {
		return nil, err
	}
	return &Cluster{s}, nil
}

// Node is one idle node for NewCluster.
type Node struct {
	Name     string
	CPUMilli int64
	Memory   int64
	GPUModel string
	GPUs     uint32
}

func NewCluster(nodes []Node) (*Cluster, error) {
	cnodes := make([]C.gpusched_node, len(nodes))
	var strs []*C.char
	defer func() {
		for _, p := range strs {
			C.free(unsafe.Pointer(p))
		}
	}()
	cstr := func(s string) *C.char { p := C.CString(s); strs = append(strs, p); return p }
	for i, n := range nodes {
		cnodes[i] = C.gpusched_node{name: cstr(n.Name), cpu_milli: C.int64_t(n.CPUMilli),
			memory_bytes: C.int64_t(n.Memory), gpu_model: cstr(n.GPUModel), gpu_count: C.uint32_t(n.GPUs)}
	}
	var e C.gpusched_error
	var s *C.gpusched_state
	var first *C.gpusched_node
	if len(cnodes) > 0 {
		first = &cnodes[0]
	}
	if err := statusError(C.gpusched_state_from_nodes(first, C.size_t(len(cnodes)), &s, &e), &e); err != nil {
		return nil, err
	}
	return &Cluster{s}, nil
}

func (c *Cluster) Close() { C.gpusched_state_free(c.s) }

// Jobs owns a gpusched_jobs.
type Jobs struct{ j *C.gpusched_jobs }

func LoadJobs(path string) (*Jobs, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var e C.gpusched_error
	var j *C.gpusched_jobs
	if err := statusError(C.gpusched_jobs_from_file(cpath, &j, &e), &e); err != nil {
		return nil, err
	}
	return &Jobs{j}, nil
}

func (j *Jobs) Close()            { C.gpusched_jobs_free(j.j) }
func (j *Jobs) Len() int          { return int(C.gpusched_jobs_count(j.j)) }
func (j *Jobs) Name(i int) string { return C.GoString(C.gpusched_jobs_name(j.j, C.size_t(i))) }

// Binding is one placed task.
type Binding struct {
	Group, Node string
	Replica     int
	GPUs        []uint32
}

// Place decides job i with the policy and keeps it on the cluster when placed. Returns the
// bindings, or nil and the reason the job waits.
func (c *Cluster) Place(jobs *Jobs, i int, policy string) ([]Binding, string, error) {
	cpolicy := C.CString(policy)
	defer C.free(unsafe.Pointer(cpolicy))
	var e C.gpusched_error
	var r *C.gpusched_result
	if err := statusError(C.gpusched_place(c.s, jobs.j, C.size_t(i), cpolicy, 42, 0, &r, &e), &e); err != nil {
		return nil, "", err
	}
	defer C.gpusched_result_free(r)
	if C.gpusched_result_verdict(r) != C.GPUSCHED_PLACED {
		return nil, C.GoString(C.gpusched_result_message(r)), nil
	}
	n := int(C.gpusched_result_task_count(r))
	out := make([]Binding, 0, n)
	for t := 0; t < n; t++ {
		var task C.gpusched_task
		if err := statusError(C.gpusched_result_task(r, C.size_t(t), &task, &e), &e); err != nil {
			return nil, "", err
		}
		b := Binding{Group: C.GoString(task.group), Node: C.GoString(task.node_name), Replica: int(task.replica)}
		if task.gpu_count > 0 {
			b.GPUs = append(b.GPUs, unsafe.Slice((*uint32)(unsafe.Pointer(task.gpus)), int(task.gpu_count))...)
		}
		out = append(out, b)
	}
	return out, "", nil
}

func run(args []string) error {
	if len(args) < 2 {
		return errors.New("usage: place CLUSTER.json JOBS.json [POLICY]")
	}
	policy := "best-fit"
	if len(args) > 2 {
		policy = args[2]
	}
	fmt.Printf("gpusched %s from Go, policy %s\n", C.GoString(C.gpusched_version()), policy)
	cluster, err := LoadCluster(args[0])
	if err != nil {
		return err
	}
	defer cluster.Close()
	jobs, err := LoadJobs(args[1])
	if err != nil {
		return err
	}
	defer jobs.Close()
	for i := 0; i < jobs.Len(); i++ {
		bindings, why, err := cluster.Place(jobs, i, policy)
		if err != nil {
			return err
		}
		if bindings == nil {
			fmt.Printf("%s waits: %s\n", jobs.Name(i), why)
			continue
		}
		for _, b := range bindings {
			fmt.Printf("%s %s/%d -> %s %v\n", jobs.Name(i), b.Group, b.Replica, b.Node, b.GPUs)
		}
	}
	// A cluster from Go values, and an error that names the field.
	small, err := NewCluster([]Node{{"g0", 8000, 64 << 30, "T4", 4}, {"g1", 8000, 64 << 30, "L4", 2}})
	if err != nil {
		return err
	}
	defer small.Close()
	fmt.Printf("built %d nodes from Go values\n", int(C.gpusched_state_node_count(small.s)))
	if _, err := NewCluster([]Node{{"bad", 8000, 1 << 30, "Z100", 1}}); err != nil {
		fmt.Printf("error as expected: %v\n", err)
	}
	return nil
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "place:", err)
		os.Exit(1)
	}
}
