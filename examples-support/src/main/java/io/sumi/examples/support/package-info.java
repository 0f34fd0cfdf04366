/**
 * What the examples' self-contained demos share, and nothing of Sumi's API: deciding whether an
 * application runs as its demo ({@link io.sumi.examples.support.DemoModeInitializer}, with the one
 * precedence rule for demo defaults), the in-process Kafka broker and PostgreSQL
 * ({@link io.sumi.examples.support.EmbeddedServices}), the demo's {@code main}
 * ({@link io.sumi.examples.support.DemoLauncher}) and a reader of the dead-letter topic
 * ({@link io.sumi.examples.support.DeadLetterLog}).
 */
@NullMarked
package io.sumi.examples.support;

import org.jspecify.annotations.NullMarked;
