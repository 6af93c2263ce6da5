#ifndef CSECITEM_GLIB_CHECK_H
#define CSECITEM_GLIB_CHECK_H
/* CSecItemGLib's declarations checked against GLib's and libsecret's headers: the checks are
 * static assertions, so this target builds only when they hold. Returns the number of
 * functions checked (SecretServiceBackendTests calls it, so the check cannot drop out). */
int csecitem_glib_checked_functions(void);
#endif
