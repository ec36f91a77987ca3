// Command crdcheck validates the chaos CRDs with Kubernetes v1.35.3's own
// CRD validation (which compiles the CEL rules) and runs their CEL rules
// on sample objects, without a cluster. A module of its own so that the
// project does not depend on apiextensions-apiserver:
//
//	cd chaos/crdcheck && go run . ../../manifests/chaos/01-crd.yaml testdata/{ok,dns,wide,wide6,name,tenyears,agentns,edit,noedit}.yaml
//	go run . ../../manifests/chaos/01-podpause-crd.yaml testdata/pp-{ok,dns,long}.yaml
//
// A file with "old" and "new" is an update (transition rules). Each line
// prints the errors; ok.yaml, noedit.yaml and pp-ok.yaml must print [].
package main

import (
	"context"
	"fmt"
	"os"

	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	v1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

func main() {
	b, _ := os.ReadFile(os.Args[1])
	var crd v1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		panic(err)
	}
	var in apiext.CustomResourceDefinition
	v1.SetObjectDefaults_CustomResourceDefinition(&crd)
	if err := v1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&crd, &in, nil); err != nil {
		panic(err)
	}
	errs := validation.ValidateCustomResourceDefinition(context.Background(), &in)
	fmt.Println("CRD validation errors:", errs)
	sch := in.Spec.Validation
	if in.Spec.Versions[0].Schema != nil {
		sch = in.Spec.Versions[0].Schema
	}
	s, err := structuralschema.NewStructural(sch.OpenAPIV3Schema)
	if err != nil {
		panic(err)
	}
	val := cel.NewValidator(s, true, celconfig.PerCallLimit)
	for _, f := range os.Args[2:] {
		ob, _ := os.ReadFile(f)
		var obj, old map[string]any
		yaml.Unmarshal(ob, &obj)
		old = nil
		if o, ok := obj["old"]; ok {
			old = o.(map[string]any)
			obj = obj["new"].(map[string]any)
		}
		var oldObj any
		if old != nil {
			oldObj = old
		}
		e, _ := val.Validate(context.Background(), field.NewPath("root"), s, obj, oldObj, celconfig.RuntimeCELCostBudget)
		fmt.Printf("%s: %v\n", f, e)
	}
}
