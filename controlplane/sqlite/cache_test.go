package sqlite

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
)

// fill sets every field reachable from v to a non-zero value: pointers
// point, maps and slices hold one element, so a copy that shares any of
// them is caught.
func fill(v reflect.Value, depth int) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), depth+1)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(7)
	case reflect.Uint8:
		v.SetUint('1')
	case reflect.Float64:
		v.SetFloat(1.5)
	}
}

// shared returns the path of a pointer, map or slice a and b share.
func shared(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return ""
		}
		if a.Pointer() == b.Pointer() {
			return path
		}
		return shared(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := range a.NumField() {
			if p := shared(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); p != "" {
				return p
			}
		}
	case reflect.Slice, reflect.Map:
		if !a.IsNil() && a.Pointer() == b.Pointer() {
			return path
		}
		if a.Kind() == reflect.Slice {
			for i := range a.Len() {
				if p := shared(a.Index(i), b.Index(i), path+"[i]"); p != "" {
					return p
				}
			}
		}
	}
	return ""
}

func TestCopyRunIsDeep(t *testing.T) {
	var r sortie.Run
	fill(reflect.ValueOf(&r).Elem(), 0)
	c := copyRun(&r)
	if !reflect.DeepEqual(&r, c) {
		t.Fatalf("copyRun differs from the run:\n%+v\n%+v", r, *c)
	}
	if p := shared(reflect.ValueOf(&r).Elem(), reflect.ValueOf(c).Elem(), "Run"); p != "" {
		t.Errorf("copyRun shares %s with the run: copy that field deeply", p)
	}
	var empty sortie.Run
	if c := copyRun(&empty); !reflect.DeepEqual(&empty, c) {
		t.Errorf("copyRun(zero run) = %+v, want the zero run (nil stays nil)", c)
	}
}

// A handle's cached run gives way to the stored one as soon as another
// handle (another process) changed it.
func TestCachedRunsFollowOtherHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	a, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	run, _, err := a.Reserve(ctx, &sortie.Reservation{Run: controlplanetest.NewRun(controlplanetest.T0), NowMs: controlplanetest.T0})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second read is the cache's
		if got, err := a.Get(ctx, run.ID); err != nil || got.CancelRequested {
			t.Fatalf("Get = %+v, %v; want the reserved run", got, err)
		}
	}
	if _, err := b.RequestCancel(ctx, run.ID, "from another handle"); err != nil {
		t.Fatal(err)
	}
	got, err := a.Get(ctx, run.ID)
	if err != nil || got.State != sortie.StateCancelled || got.Version == run.Version {
		t.Errorf("Get after another handle cancelled the run = %+v, %v; want it cancelled, at a new version", got, err)
	}
	got.Labels = map[string]string{"edited": "by the caller"}
	if again, _ := a.Get(ctx, run.ID); again.Labels["edited"] != "" {
		t.Errorf("a caller's edit of a returned run reached the cache: %+v", again.Labels)
	}
}
