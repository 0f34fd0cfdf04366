/**
 * Implementation of the Spring Kafka binder. Not API: may change in any release.
 */
@NullMarked
package io.sumi.kafka.internal;

import org.jspecify.annotations.NullMarked;
