#include "csecitem_link_hook.h"

/* Defined by the module SecItem (SecItemBackendRegistry.swift); absent without it. */
extern void secitem_declare_builtin_settings(void) __attribute__((weak));

void csecitem_declare_builtin_settings(void) {
    if (secitem_declare_builtin_settings != 0) secitem_declare_builtin_settings();
}
