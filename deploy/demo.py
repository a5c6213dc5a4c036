"""The compose demo's producer and consumer: `demo.py produce URL QUEUE` publishes a numbered
message every 0.2 s with confirms; `demo.py consume URL QUEUE` prints what arrives."""

from __future__ import annotations

import asyncio
import sys

import aio_pika


async def produce(url: str, queue: str) -> None:
    connection = await aio_pika.connect_robust(url)
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        await channel.declare_queue(queue, durable=True)
        number = 0
        while True:
            number += 1
            message = aio_pika.Message(f"order {number}".encode(), delivery_mode=2)
            await channel.default_exchange.publish(message, routing_key=queue)
            print(f"published order {number}", flush=True)
            await asyncio.sleep(0.2)


async def consume(url: str, queue: str) -> None:
    connection = await aio_pika.connect_robust(url)
    async with connection:
        channel = await connection.channel()
        await channel.set_qos(prefetch_count=10)
        declared = await channel.declare_queue(queue, durable=True)
        async with declared.iterator() as messages:
            async for message in messages:
                async with message.process():
                    hops = (message.headers or {}).get("x-received-from") or []
                    source = f" via federation from {hops[0]['uri']}" if hops else ""
                    print(f"received {message.body.decode()}{source}", flush=True)


async def main(role: str, url: str, queue: str) -> None:
    while True:  # the broker may still be starting: try again
        try:
            await (produce if role == "produce" else consume)(url, queue)
        except (ConnectionError, aio_pika.exceptions.AMQPException) as error:
            print(f"{role}: {error!r}; retrying", flush=True)
            await asyncio.sleep(1)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
