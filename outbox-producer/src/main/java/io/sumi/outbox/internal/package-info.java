/**
 * The outbox's SQL per database, its JSON header encoding and JDBC plumbing. Not API: may change
 * in any release.
 */
@NullMarked
package io.sumi.outbox.internal;

import org.jspecify.annotations.NullMarked;
