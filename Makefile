# Build and install Mediator: mediatord, mediatorctl and the systemd units.
#
#   make build                       swift build -c release
#   sudo make install                binaries, units, docs under PREFIX (/usr/local)
#   sudo make uninstall              removes exactly what install put
#   make units DESTDIR=/tmp/stage    only render the units (for tests)
#
# Variables: PREFIX, DESTDIR, BINDIR, LIBEXECDIR, DOCDIR, SYSTEMDSYSTEMUNITDIR,
# SYSTEMDUSERUNITDIR, SYSUSERSDIR, SWIFT, SWIFT_BUILD_FLAGS, BIN_PATH (where the built
# binaries are; default: what `swift build --show-bin-path` says).

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
# Components that systemd runs (mediator-component@.service) are
# LIBEXECDIR/mediator/components/TARGET, installed by whoever ships them.
LIBEXECDIR ?= $(PREFIX)/libexec
DOCDIR ?= $(PREFIX)/share/doc/mediator

# With PREFIX=/usr, use the distribution's unit folders (pkg-config systemd);
# otherwise PREFIX/lib/systemd/..., which systemd also searches for /usr/local.
ifeq ($(PREFIX),/usr)
SYSTEMDSYSTEMUNITDIR ?= $(or $(shell pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null),/usr/lib/systemd/system)
SYSTEMDUSERUNITDIR ?= $(or $(shell pkg-config --variable=systemduserunitdir systemd 2>/dev/null),/usr/lib/systemd/user)
SYSUSERSDIR ?= $(or $(shell pkg-config --variable=sysusersdir systemd 2>/dev/null),/usr/lib/sysusers.d)
else
SYSTEMDSYSTEMUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSTEMDUSERUNITDIR ?= $(PREFIX)/lib/systemd/user
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
endif

SWIFT ?= $(or $(shell command -v swift 2>/dev/null),/opt/swift/usr/bin/swift)
SWIFT_BUILD_FLAGS ?= -c release
# Evaluated only by the recipes that need it (install, show-bin-path).
BIN_PATH ?= $(shell $(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path 2>/dev/null || echo .build/release)

INSTALL ?= install
SED ?= sed

PROGRAMS = mediatord mediatorctl
SYSTEM_UNITS = mediatord.socket mediatord.service mediator-component@.service
USER_UNITS = mediatord.socket mediatord.service
DOCS = systemd.md daemon.md policy.md scale-out.md

RENDER = $(SED) -e 's|@bindir@|$(BINDIR)|g' -e 's|@libexecdir@|$(LIBEXECDIR)|g' -e 's|@docdir@|$(DOCDIR)|g'

.PHONY: deb all build install install-bin install-docs units uninstall show-bin-path verify-units install-sysusers install-polkit

all: build

build:
	$(SWIFT) build $(SWIFT_BUILD_FLAGS)

show-bin-path:
	@echo $(BIN_PATH)

# Installs the binaries already built; builds them only when one is missing,
# so `sudo make install` after `make build` does not run the compiler as root.
install-bin:
	@bin='$(BIN_PATH)'; \
	for p in $(PROGRAMS); do \
		if [ ! -x "$$bin/$$p" ]; then \
			echo "make: $$bin/$$p is missing, building"; \
			$(SWIFT) build $(SWIFT_BUILD_FLAGS) || exit 1; \
			bin=$$($(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path) || exit 1; \
			break; \
		fi; \
	done; \
	$(INSTALL) -d '$(DESTDIR)$(BINDIR)' && \
	for p in $(PROGRAMS); do \
		echo "$(INSTALL) -m 0755 $$bin/$$p $(DESTDIR)$(BINDIR)/$$p"; \
		$(INSTALL) -m 0755 "$$bin/$$p" '$(DESTDIR)$(BINDIR)/'"$$p" || exit 1; \
	done

# Renders the units with @bindir@, @libexecdir@ and @docdir@ replaced into
# the unit folders under DESTDIR.
units:
	$(INSTALL) -d '$(DESTDIR)$(SYSTEMDSYSTEMUNITDIR)' '$(DESTDIR)$(SYSTEMDUSERUNITDIR)'
	$(INSTALL) -m 0644 systemd/mediatord.socket '$(DESTDIR)$(SYSTEMDSYSTEMUNITDIR)/mediatord.socket'
	$(RENDER) systemd/mediatord.service.in > '$(DESTDIR)$(SYSTEMDSYSTEMUNITDIR)/mediatord.service'
	chmod 0644 '$(DESTDIR)$(SYSTEMDSYSTEMUNITDIR)/mediatord.service'
	$(RENDER) 'systemd/mediator-component@.service.in' > '$(DESTDIR)$(SYSTEMDSYSTEMUNITDIR)/mediator-component@.service'
	chmod 0644 '$(DESTDIR)$(SYSTEMDSYSTEMUNITDIR)/mediator-component@.service'
	$(INSTALL) -m 0644 systemd/user/mediatord.socket '$(DESTDIR)$(SYSTEMDUSERUNITDIR)/mediatord.socket'
	$(RENDER) systemd/user/mediatord.service.in > '$(DESTDIR)$(SYSTEMDUSERUNITDIR)/mediatord.service'
	chmod 0644 '$(DESTDIR)$(SYSTEMDUSERUNITDIR)/mediatord.service'

# The system user the service runs as; created at once unless staging into
# a DESTDIR (then the package's own install step runs systemd-sysusers).
install-sysusers:
	$(INSTALL) -d '$(DESTDIR)$(SYSUSERSDIR)'
	$(INSTALL) -m 0644 systemd/sysusers.d/mediator.conf '$(DESTDIR)$(SYSUSERSDIR)/mediator.conf'
	if [ -z '$(DESTDIR)' ]; then systemd-sysusers '$(SYSUSERSDIR)/mediator.conf'; fi

install-docs:
	$(INSTALL) -d '$(DESTDIR)$(DOCDIR)'
	$(INSTALL) -m 0644 $(addprefix docs/,$(DOCS)) '$(DESTDIR)$(DOCDIR)/'

# Lets the mediator user start and stop mediator-component@*.service units
# (components whose manifest names a unit).
POLKITRULESDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/share/polkit-1/rules.d,/etc/polkit-1/rules.d)

install-polkit:
	$(INSTALL) -d '$(DESTDIR)$(POLKITRULESDIR)'
	$(INSTALL) -m 0644 systemd/polkit/50-mediator.rules '$(DESTDIR)$(POLKITRULESDIR)/50-mediator.rules'

install: install-bin units install-sysusers install-polkit install-docs

uninstall:
	rm -f $(foreach p,$(PROGRAMS),'$(DESTDIR)$(BINDIR)/$(p)')
	rm -f $(foreach u,$(SYSTEM_UNITS),'$(DESTDIR)$(SYSTEMDSYSTEMUNITDIR)/$(u)')
	rm -f $(foreach u,$(USER_UNITS),'$(DESTDIR)$(SYSTEMDUSERUNITDIR)/$(u)')
	rm -f $(foreach d,$(DOCS),'$(DESTDIR)$(DOCDIR)/$(d)')
	rm -f '$(DESTDIR)$(SYSUSERSDIR)/mediator.conf' '$(DESTDIR)$(POLKITRULESDIR)/50-mediator.rules' 
	rmdir '$(DESTDIR)$(DOCDIR)' 2>/dev/null || true

verify-units:
	bash Tests/systemd/verify-units.sh

# A Debian package of the static release binaries, units and docs
# (systemd/debian/build-deb.sh): dist/mediator_VERSION_ARCH.deb.
deb:
	bash systemd/debian/build-deb.sh
