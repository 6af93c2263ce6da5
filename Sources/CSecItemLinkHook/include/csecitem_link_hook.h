#ifndef CSECITEM_LINK_HOOK_H
#define CSECITEM_LINK_HOOK_H

/* The built-in settings' registration hook (docs/architecture.md, "Settings").
 *
 * The core cannot name the modules above it, yet the config file's keys are the declared
 * settings of every backend the program has. The module SecItem defines
 * `secitem_declare_builtin_settings` (a Swift @_cdecl function that declares its providers'
 * and key sources' settings); the core refers to it weakly. A program that links SecItem
 * gets the call the first time the settings are read; a program of the core alone
 * (a third-party backend's tests) has no such symbol, and the call does nothing. */

/* Calls `secitem_declare_builtin_settings` when the program links it; else nothing. */
void csecitem_declare_builtin_settings(void);

#endif
