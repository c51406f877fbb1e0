/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RoCEv2 packets as the tests that send them from a raw IPv4 socket build
 * them (the IP header theirs, so that the ICRC covers the header as sent):
 * big-endian fields, the IPv4 and UDP headers, and the ICRC.
 *
 * The ICRC (IBA annex A17.3.3, as selftests/icrc.py checks it): CRC-32
 * (IEEE 802.3, reflected, as zlib's crc32) over 8 bytes of 0xff, then the
 * packet from its IP header to the end of its pad with IPv4 TOS, TTL and
 * header checksum, the UDP checksum and BTH byte 4 set to 0xff; zlib's
 * result, stored least significant byte first.
 */
#ifndef RSOFT_WIRE_ROCEV2_H
#define RSOFT_WIRE_ROCEV2_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ROCE_PORT	4791
#define IP_HDR		20
#define UDP_HDR		8
#define BTH_LEN		12
#define ICRC_LEN	4
#define HDRS		(IP_HDR + UDP_HDR + BTH_LEN)	/* what the ICRC masks */
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

static inline void put16(uint8_t *p, uint32_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void put24(uint8_t *p, uint32_t v)
{
	p[0] = v >> 16;
	p[1] = v >> 8;
	p[2] = v;
}

static inline void put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline uint32_t get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | p[1] << 8 | p[2];
}

/* The fields of an IPv4 header (no options) and a UDP header to port 4791. */
struct ipv4_udp {
	uint32_t saddr, daddr;	/* network byte order */
	uint16_t id;		/* not 0, which would have the kernel pick one */
	uint16_t sport;
	uint8_t tos, ttl;	/* masked in the ICRC */
};

/* Writes @h's headers of a packet of @len bytes at @p. */
static inline void put_ipv4_udp(uint8_t *p, size_t len, const struct ipv4_udp *h)
{
	p[0] = 0x45;
	p[1] = h->tos;
	put16(p + 2, len);
	put16(p + 4, h->id);
	put16(p + 6, 0x4000);			/* DF */
	p[8] = h->ttl;
	p[9] = IPPROTO_UDP;
	put16(p + 10, 0);			/* the kernel writes it */
	memcpy(p + 12, &h->saddr, 4);
	memcpy(p + 16, &h->daddr, 4);
	put16(p + 20, h->sport);
	put16(p + 22, ROCE_PORT);
	put16(p + 24, len - IP_HDR);
	put16(p + 26, 0);			/* no UDP checksum */
}

/* zlib's crc32(): @crc is the result so far (0 to start). */
static inline uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n)
{
	static uint32_t table[256];

	/* built on the first call: its entry 1 is never 0 once built */
	if (!table[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;

			for (int bit = 0; bit < 8; bit++)
				c = c & 1 ? 0xedb88320 ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	crc = ~crc;
	while (n--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* Writes the ICRC of @p, an IPv4 (no options) RoCEv2 packet of @len bytes. */
static inline void seal(uint8_t *p, size_t len)
{
	static const uint8_t lrh[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const int masked_at[] = { 1, 8, 10, 11, 26, 27, 32 };
	uint8_t hdrs[HDRS];
	uint32_t crc;

	if (len < HDRS + ICRC_LEN)
		return;
	memcpy(hdrs, p, HDRS);
	for (size_t i = 0; i < ARRAY_SIZE(masked_at); i++)
		hdrs[masked_at[i]] = 0xff;
	crc = crc32_update(0, lrh, sizeof(lrh));
	crc = crc32_update(crc, hdrs, HDRS);
	crc = crc32_update(crc, p + HDRS, len - HDRS - ICRC_LEN);
	p[len - 4] = crc;
	p[len - 3] = crc >> 8;
	p[len - 2] = crc >> 16;
	p[len - 1] = crc >> 24;
}

#endif /* RSOFT_WIRE_ROCEV2_H */
