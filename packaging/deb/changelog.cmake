# Writes the package's changelog, the Debian changelog of a native package (the version has no
# Debian revision), which the package installs as /usr/share/doc/ddft/changelog.gz. Run at build
# time (CMakeLists.txt):
#   cmake -DVERSION=X.Y.Z -DMAINTAINER="Name <address>" -DOUTPUT=FILE -P changelog.cmake
# One entry, for VERSION, signed by MAINTAINER and dated SOURCE_DATE_EPOCH when that is set (a
# reproducible build), else the time of the build. The package is made from the source tree, so
# it has no packaging history of its own: the entry points to where the project's is.
foreach(var VERSION MAINTAINER OUTPUT)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "changelog.cmake: -D${var}=... is missing")
  endif()
endforeach()
# RFC 5322 date, as dpkg-parsechangelog reads it; string(TIMESTAMP) honours SOURCE_DATE_EPOCH.
string(TIMESTAMP date "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(WRITE "${OUTPUT}" "ddft (${VERSION}) unstable; urgency=medium

  * ddft ${VERSION}, packaged from its source tree with CPack. What it does
    and how to run it: README.md and docs/ beside this file. What changed:
    the project's version control history.

 -- ${MAINTAINER}  ${date}
")
