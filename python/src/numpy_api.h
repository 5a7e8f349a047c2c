// numpy's C API for the module's sources: module.cpp imports it (the one
// translation unit without NO_IMPORT_ARRAY), the others use the shared table.
#pragma once

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL tenferro_python_ARRAY_API
#ifndef TENFERRO_PYTHON_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#include <Python.h>
#include <numpy/arrayobject.h>
