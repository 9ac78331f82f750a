# Debian package of the binaries and example configs: cpack -G DEB in the build folder.
set(CPACK_PACKAGE_NAME "ddft")
set(CPACK_PACKAGE_VENDOR "ddft")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "One-way file transfer across a data diode")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "ddft maintainers")
set(CPACK_DEBIAN_PACKAGE_SECTION "net")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Runtime libraries are found by dpkg-shlibdeps from the binaries themselves.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_GENERATOR "DEB")
include(CPack)
