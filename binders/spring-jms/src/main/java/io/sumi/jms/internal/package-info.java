/**
 * Implementation of the Spring JMS binder. Not API: may change in any release.
 */
@NullMarked
package io.sumi.jms.internal;

import org.jspecify.annotations.NullMarked;
