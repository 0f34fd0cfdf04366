/**
 * Implementation of the Spring AMQP binder. Not API: may change in any release.
 */
@NullMarked
package io.sumi.rabbit.internal;

import org.jspecify.annotations.NullMarked;
