// Command pki makes the certificates and keys of the local upstream control plane
// (ci/upstream-up.sh): certificate authorities, serving and client certificates signed by them,
// and the service-account signing key pair. Every key is ECDSA P-256; every file is PEM.
//
//	pki ca   -dir D -name ca -cn kubernetes
//	pki cert -dir D -ca ca -name apiserver -cn kube-apiserver -server -ip 127.0.0.1 -dns localhost
//	pki cert -dir D -ca ca -name admin -cn kubernetes-admin -o system:masters -client
//	pki keypair -dir D -name sa
//
// ca writes D/NAME.crt and D/NAME.key; cert writes D/NAME.crt and D/NAME.key signed by
// D/CA.crt and D/CA.key; keypair writes D/NAME.key and D/NAME.pub. An existing pair is kept, so
// that a second run changes nothing; delete the files to make new ones.
package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const validity = 5 * 365 * 24 * time.Hour

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "ca":
		err = runCA(os.Args[2:])
	case "cert":
		err = runCert(os.Args[2:])
	case "keypair":
		err = runKeyPair(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pki:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: pki ca|cert|keypair -dir DIR -name NAME [flags] (pki SUBCOMMAND -h for the flags)")
	os.Exit(2)
}

// list is a comma-separated flag that may also be repeated.
type list []string

func (l *list) String() string { return strings.Join(*l, ",") }

func (l *list) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func runCA(args []string) error {
	fs := flag.NewFlagSet("ca", flag.ExitOnError)
	dir := fs.String("dir", "", "output directory")
	name := fs.String("name", "ca", "file name (without extension)")
	cn := fs.String("cn", "", "subject common name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *cn == "" {
		return errors.New("ca: -dir and -cn are required")
	}
	crtPath, keyPath := paths(*dir, *name)
	if exists(crtPath) && exists(keyPath) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: *cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return err
	}
	return writePair(crtPath, keyPath, der, key)
}

func runCert(args []string) error {
	fs := flag.NewFlagSet("cert", flag.ExitOnError)
	dir := fs.String("dir", "", "output directory")
	name := fs.String("name", "", "file name (without extension)")
	caName := fs.String("ca", "ca", "the signing CA's file name in -dir (without extension)")
	cn := fs.String("cn", "", "subject common name")
	var orgs, ips, dnsNames list
	fs.Var(&orgs, "o", "subject organizations (groups), comma-separated")
	fs.Var(&ips, "ip", "IP subject alternative names, comma-separated")
	fs.Var(&dnsNames, "dns", "DNS subject alternative names, comma-separated")
	server := fs.Bool("server", false, "usable as a TLS server certificate")
	client := fs.Bool("client", false, "usable as a TLS client certificate")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *name == "" || *cn == "" {
		return errors.New("cert: -dir, -name and -cn are required")
	}
	if !*server && !*client {
		return errors.New("cert: -server, -client or both")
	}
	crtPath, keyPath := paths(*dir, *name)
	if exists(crtPath) && exists(keyPath) {
		return nil
	}
	caCert, caKey, err := loadCA(paths(*dir, *caName))
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: *cn, Organization: orgs},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		DNSNames:              dnsNames,
	}
	if *server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if *client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			return fmt.Errorf("cert: %q is not an IP address", s)
		}
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		return err
	}
	return writePair(crtPath, keyPath, der, key)
}

func runKeyPair(args []string) error {
	fs := flag.NewFlagSet("keypair", flag.ExitOnError)
	dir := fs.String("dir", "", "output directory")
	name := fs.String("name", "sa", "file name (without extension)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("keypair: -dir is required")
	}
	keyPath := filepath.Join(*dir, *name+".key")
	pubPath := filepath.Join(*dir, *name+".pub")
	if exists(keyPath) && exists(pubPath) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	return writePEM(pubPath, "PUBLIC KEY", pub, 0o644)
}

func paths(dir, name string) (string, string) {
	return filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n
}

func loadCA(crtPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	crtPEM, err := os.ReadFile(crtPath)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, err
	}
	crtBlock, _ := pem.Decode(crtPEM)
	keyBlock, _ := pem.Decode(keyPEM)
	if crtBlock == nil || keyBlock == nil {
		return nil, nil, fmt.Errorf("%s or %s holds no PEM block", crtPath, keyPath)
	}
	crt, err := x509.ParseCertificate(crtBlock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", keyPath, err)
	}
	return crt, key, nil
}

func writePair(crtPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	return writePEM(crtPath, "CERTIFICATE", der, 0o644)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

// writePEM writes through a temporary file and a rename, so a reader never sees half a file.
func writePEM(path, blockType string, der []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	data := pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
