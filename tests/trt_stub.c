/* Stand-ins for the extern "C" entry points that TensorRT's Python bindings import from
 * libnvinfer, libnvinfer_plugin and libnvonnxparser (the same nine symbols in 10.x and 11.x:
 * `nm -D --undefined-only tensorrt.so`). With these the real extension module imports on a
 * machine without TensorRT's libraries, so every class, enum, property and signature is the
 * real one; every factory returns NULL, so constructing a Builder, Runtime or OnnxParser fails.
 * tests/trt_bindings.py compiles this once per soname the module asks for (`readelf -d`). */
#include <stdbool.h>
#include <stddef.h>

void *createInferBuilder_INTERNAL(void *logger, int version) { return NULL; }
void *createInferRefitter_INTERNAL(void *engine, void *logger, int version) { return NULL; }
void *createInferRuntime_INTERNAL(void *logger, int version) { return NULL; }
void *createNvOnnxParser_INTERNAL(void *network, void *logger, int version) { return NULL; }
void *createNvOnnxParserRefitter_INTERNAL(void *refitter, void *logger, int version) { return NULL; }
void *getBuilderPluginRegistry(int capability) { return NULL; }
void *getPluginRegistry(void) { return NULL; }
int getNvOnnxParserVersion(void) { return 0; }
bool initLibNvInferPlugins(void *logger, const char *library_namespace) { return true; }
