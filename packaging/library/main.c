/* The installed securitykey and securitykeyd: main() of the program in libsecuritykey.so.0, which
 * holds all of the code (make release; Docs/Packaging in Docs/Performance.md, "Artifact sizes").
 * SECURITYKEY_ENTRY names the program's entry point there (SwiftPM names an executable module's
 * entry MODULE_main): securitykey_main or securitykeyd_main. */
#ifndef SECURITYKEY_ENTRY
#error "compile with -DSECURITYKEY_ENTRY=securitykey_main (or securitykeyd_main)"
#endif

int SECURITYKEY_ENTRY(int argc, char **argv);

int main(int argc, char **argv) {
    return SECURITYKEY_ENTRY(argc, argv);
}
