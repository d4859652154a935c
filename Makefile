# Build and install Mediator: mediatord, mediatorctl and the systemd units.
#
#   make build                       swift build -c release
#   sudo make install                binaries, units, docs, man pages and shell
#                                    completion under PREFIX (/usr/local)
#   sudo make uninstall              removes exactly what install put
#   make units DESTDIR=/tmp/stage    only render the units (for tests)
#
# Variables: PREFIX, DESTDIR, BINDIR, LIBEXECDIR, DOCDIR, MANDIR, BASHCOMPLETIONDIR,
# ZSHCOMPLETIONDIR, FISHCOMPLETIONDIR, SYSTEMDSYSTEMUNITDIR, SYSTEMDUSERUNITDIR,
# SYSUSERSDIR, SWIFT, SWIFT_BUILD_FLAGS, BIN_PATH (where the built binaries are;
# default: what `swift build --show-bin-path` says), GENERATE_MANUAL (ArgumentParser's
# generate-manual; default: BIN_PATH/generate-manual, built when missing), MAN_DATE.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
# Components that systemd runs (mediator-component@.service) are
# LIBEXECDIR/mediator/components/TARGET, installed by whoever ships them.
LIBEXECDIR ?= $(PREFIX)/libexec
DOCDIR ?= $(PREFIX)/share/doc/mediator
MANDIR ?= $(PREFIX)/share/man
# Where each shell looks for a package's completion (bash-completion and fish
# search $XDG_DATA_DIRS, which has /usr/local/share; Debian's zsh reads
# vendor-completions under /usr and site-functions under /usr/local).
BASHCOMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPLETIONDIR ?= $(PREFIX)/share/zsh/$(if $(filter /usr,$(PREFIX)),vendor-completions,site-functions)
FISHCOMPLETIONDIR ?= $(PREFIX)/share/fish/vendor_completions.d

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
GENERATE_MANUAL ?= $(BIN_PATH)/generate-manual
# The man pages' date: the last commit's, or SOURCE_DATE_EPOCH (reproducible builds).
MAN_DATE ?= $(shell date -u -d "@$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || date +%s)}" +%Y-%m-%d)

INSTALL ?= install
SED ?= sed

PROGRAMS = mediatord mediatorctl
SYSTEM_UNITS = mediatord.socket mediatord.service mediator-component@.service
USER_UNITS = mediatord.socket mediatord.service
DOCS = systemd.md daemon.md policy.md scale-out.md

RENDER = $(SED) -e 's|@bindir@|$(BINDIR)|g' -e 's|@libexecdir@|$(LIBEXECDIR)|g' -e 's|@docdir@|$(DOCDIR)|g'

.PHONY: deb all build install install-bin install-docs install-man install-completion units uninstall show-bin-path \
	verify-units install-sysusers install-polkit

all: build

build:
	$(SWIFT) build $(SWIFT_BUILD_FLAGS)
	$(SWIFT) build $(SWIFT_BUILD_FLAGS) --product generate-manual

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

# Man pages from the installed commands' own help: mediatorctl(1), and
# mediatord(8) as a daemon; gzipped, as Debian ships them. generate-manual is
# built when missing, as install-bin builds the binaries.
install-man: install-bin
	@gm='$(GENERATE_MANUAL)'; \
	if [ ! -x "$$gm" ]; then \
		echo "make: $$gm is missing, building"; \
		$(SWIFT) build $(SWIFT_BUILD_FLAGS) --product generate-manual || exit 1; \
		gm="$$($(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path)/generate-manual" || exit 1; \
	fi; \
	$(INSTALL) -d '$(DESTDIR)$(MANDIR)/man1' '$(DESTDIR)$(MANDIR)/man8' && \
	"$$gm" '$(DESTDIR)$(BINDIR)/mediatorctl' --section 1 --date '$(MAN_DATE)' -o '$(DESTDIR)$(MANDIR)/man1' && \
	"$$gm" '$(DESTDIR)$(BINDIR)/mediatord' --section 8 --date '$(MAN_DATE)' -o '$(DESTDIR)$(MANDIR)/man8' || exit 1; \
	for page in man1/mediatorctl.1 man8/mediatord.8; do \
		f='$(DESTDIR)$(MANDIR)/'"$$page"; \
		sed -i 's/^$$/.Pp/' "$$f" && gzip -9nf "$$f" && chmod 0644 "$$f.gz" || exit 1; \
	done
# (mdoc wants no blank lines: a paragraph break is .Pp.)

# Shell completion from `mediatorctl --generate-completion-script`. The bash
# script loses its #! line: bash-completion sources it, never runs it.
install-completion: install-bin
	$(INSTALL) -d '$(DESTDIR)$(BASHCOMPLETIONDIR)' '$(DESTDIR)$(ZSHCOMPLETIONDIR)' '$(DESTDIR)$(FISHCOMPLETIONDIR)'
	'$(DESTDIR)$(BINDIR)/mediatorctl' --generate-completion-script bash | sed '1{/^#!/d}' > '$(DESTDIR)$(BASHCOMPLETIONDIR)/mediatorctl'
	'$(DESTDIR)$(BINDIR)/mediatorctl' --generate-completion-script zsh > '$(DESTDIR)$(ZSHCOMPLETIONDIR)/_mediatorctl'
	'$(DESTDIR)$(BINDIR)/mediatorctl' --generate-completion-script fish > '$(DESTDIR)$(FISHCOMPLETIONDIR)/mediatorctl.fish'
	chmod 0644 '$(DESTDIR)$(BASHCOMPLETIONDIR)/mediatorctl' '$(DESTDIR)$(ZSHCOMPLETIONDIR)/_mediatorctl' \
		'$(DESTDIR)$(FISHCOMPLETIONDIR)/mediatorctl.fish'

# Lets the mediator user start and stop mediator-component@*.service units
# (components whose manifest names a unit).
POLKITRULESDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/share/polkit-1/rules.d,/etc/polkit-1/rules.d)

install-polkit:
	$(INSTALL) -d '$(DESTDIR)$(POLKITRULESDIR)'
	$(INSTALL) -m 0644 systemd/polkit/50-mediator.rules '$(DESTDIR)$(POLKITRULESDIR)/50-mediator.rules'

install: install-bin units install-sysusers install-polkit install-docs install-man install-completion

uninstall:
	rm -f $(foreach p,$(PROGRAMS),'$(DESTDIR)$(BINDIR)/$(p)')
	rm -f $(foreach u,$(SYSTEM_UNITS),'$(DESTDIR)$(SYSTEMDSYSTEMUNITDIR)/$(u)')
	rm -f $(foreach u,$(USER_UNITS),'$(DESTDIR)$(SYSTEMDUSERUNITDIR)/$(u)')
	rm -f $(foreach d,$(DOCS),'$(DESTDIR)$(DOCDIR)/$(d)')
	rm -f '$(DESTDIR)$(SYSUSERSDIR)/mediator.conf' '$(DESTDIR)$(POLKITRULESDIR)/50-mediator.rules' 
	rm -f '$(DESTDIR)$(MANDIR)/man1/mediatorctl.1.gz' '$(DESTDIR)$(MANDIR)/man8/mediatord.8.gz'
	rm -f '$(DESTDIR)$(BASHCOMPLETIONDIR)/mediatorctl' '$(DESTDIR)$(ZSHCOMPLETIONDIR)/_mediatorctl' \
		'$(DESTDIR)$(FISHCOMPLETIONDIR)/mediatorctl.fish'
	rmdir '$(DESTDIR)$(DOCDIR)' 2>/dev/null || true

verify-units:
	bash Tests/systemd/verify-units.sh

# A Debian package of the static release binaries, units and docs
# (systemd/debian/build-deb.sh): dist/mediator_VERSION_ARCH.deb.
deb:
	bash systemd/debian/build-deb.sh
